/* The event list; see event.h for the model.
 *
 * A calendar queue (Brown 1988) in three parts, ordered by (time, ord):
 *
 *   bottom  the events of the current tick (and any earlier one), sorted;
 *           pops take its head;
 *   wheel   W buckets of one tick each (2^shift ps) for the ticks after
 *           the current one, up to W - 1 ahead; unsorted, a bitmap says
 *           which are not empty;
 *   far     a 4-ary heap of the events beyond the wheel (timers).
 *
 * An insert is a shift, a compare and an append; a pop reads the bottom's
 * head. When the bottom runs dry the next non-empty tick is found in the
 * bitmap (or the far heap's top, whichever is earlier), the far events
 * that now fall inside the wheel move into it, and that tick's bucket is
 * sorted into the bottom: a few nodes, as the tick width follows the
 * event density. The 4-ary heap this replaced cost about 450
 * instructions per event in sifts with 10^4 events pending; this costs
 * tens.
 *
 * Sizing. After 2^10 pops, then every 4 times as many up to 2^16, the
 * list measures the rate at which events were popped and sets the tick
 * to hold about 16 of them (fewer per tick cost more in finding the next
 * tick than they save in sorting: 64-host permutation, 4: 11,405
 * instructions per packet, 8: 11,196, 16: 11,112, 32: 11,267) and W
 * to 8 / 16 of the events pending (ev_resize). A bucket starts with room
 * for a tick's worth: grown from 4, its reallocations cost 125
 * instructions per packet.
 * A change rebuilds the wheel (O(events in it)).
 *
 * Ties: every node carries its order key (event.h: the scheduling LP and
 * that LP's sequence number) and the bottom is sorted on (time, ord), so
 * equal times pop in the same order whatever path the nodes took.
 *
 * Memory. A bucket's array goes with its nodes: when a tick becomes the
 * bottom, the bucket is left without one, and the bottom's old array
 * goes to a short stack of spares (or is freed, if big) that the next
 * empty buckets take. Arrays that stayed with their bucket, as they did
 * at first, added up to W arrays of the largest size each bucket ever
 * held: 677 of the 853 MB of heap of a 1,024-host permutation of 4 MB
 * flows, growing with the simulated time. Now the arrays are about the
 * events in the wheel.
 *
 * Cancellation is lazy: it frees the slot at once and leaves the node; a
 * node whose key no longer matches its slot's is dropped when it
 * reaches the bottom's head or the heap's top. Hosts cancel only when an
 * engine's deadline moves earlier. */
#include "sim/event.h"
#include "sim/event_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Limits and tuning (event_int.h has the node and its limits). */
#define EV_SLOT_BITS 24
#define EV_MAX_SLOTS ((1u << EV_SLOT_BITS) - 1)
#define EV_DEFAULT_HINT 1024
#define EV_NO_ORD UINT64_MAX
#define EV_ARITY 4
#define EV_MIN_WHEEL 1024u
#define EV_MAX_WHEEL (1u << 22)
#define EV_SHIFT0 10        /* first tick: 1024 ps, about a 50-byte frame */
#define EV_EPOCH (1u << 16) /* pops between sizings, after a fast start */
#define EV_EPOCH0 (1u << 10)
#define EV_PER_TICK 16 /* events a tick should hold */
#define EV_MAX_SHIFT 40
#define EV_SPARE_CAP 64 /* nodes: a bigger array is freed, not kept */

static inline bool ev_less(const struct ev_node *a, const struct ev_node *b)
{
    return a->time < b->time || (a->time == b->time && a->ord < b->ord);
}

static inline bool ev_stale(const struct mroce_sim_evlist *l,
                            const struct ev_node *nd)
{
    return nd->slot != EV_NO_SLOT && l->slots[nd->slot].ord != nd->ord;
}

/* ---- Vectors ---- */

static bool ev_vec_reserve(struct ev_vec *v, uint32_t n)
{
    if (n <= v->cap)
        return true;
    uint32_t cap = v->cap ? v->cap : EV_PER_TICK; /* a tick's worth */
    while (cap < n) {
        if (cap > UINT32_MAX / 2)
            return false;
        cap *= 2;
    }
    struct ev_node *p = realloc(v->v, (size_t)cap * sizeof(*p));
    if (!p)
        return false;
    v->v = p;
    v->cap = cap;
    return true;
}

static inline bool ev_vec_push(struct ev_vec *v, struct ev_node nd)
{
    if (v->n == v->cap && !ev_vec_reserve(v, v->n + 1))
        return false;
    v->v[v->n++] = nd;
    return true;
}

/* Insertion sort: buckets hold a few nodes, often already in order (a
 * node in place is not copied). */
static void ev_sort_small(struct ev_node *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        if (!ev_less(&a[i], &a[i - 1]))
            continue;
        struct ev_node x = a[i];
        uint32_t j = i;
        while (j > 0 && ev_less(&x, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/* Quicksort for the big buckets of synchronized bursts (thousands of
 * hosts starting at once): median of three, the smaller side recursed,
 * no allocation (glibc's qsort mallocs for its merge sort). Keys are
 * unique (an LP and its sequence), so the order is total. */
static void ev_sort(struct ev_node *a, uint32_t n)
{
    while (n > 32) {
        struct ev_node *m = &a[n / 2], *z = &a[n - 1], p;
        if (ev_less(m, a))
            p = *m, *m = *a, *a = p;
        if (ev_less(z, m))
            p = *z, *z = *m, *m = p;
        if (ev_less(m, a))
            p = *m, *m = *a, *a = p;
        struct ev_node piv = *m;
        uint32_t i = 0, j = n - 1;
        for (;;) {
            while (ev_less(&a[i], &piv))
                i++;
            while (ev_less(&piv, &a[j]))
                j--;
            if (i >= j)
                break;
            p = a[i], a[i] = a[j], a[j] = p;
            i++;
            j--;
        }
        uint32_t left = j + 1; /* a[0..j] <= piv <= a[j+1..] */
        if (left < n - left) {
            ev_sort(a, left);
            a += left;
            n -= left;
        } else {
            ev_sort(a + left, n - left);
            n = left;
        }
    }
    ev_sort_small(a, n);
}

/* ---- The far heap (4-ary, as before the wheel) ---- */

static bool ev_heap_push(struct mroce_sim_evlist *l, struct ev_node nd)
{
    if (l->hn == l->hcap) {
        uint32_t cap = l->hcap ? l->hcap * 2 : 64;
        struct ev_node *h = realloc(l->heap, (size_t)cap * sizeof(*h));
        if (!h)
            return false;
        l->heap = h;
        l->hcap = cap;
    }
    struct ev_node *h = l->heap;
    uint32_t i = l->hn++;
    while (i > 0) {
        uint32_t parent = (i - 1) / EV_ARITY;
        if (!ev_less(&nd, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = nd;
    return true;
}

static void ev_heap_pop(struct mroce_sim_evlist *l)
{
    struct ev_node *h = l->heap;
    uint32_t n = --l->hn;
    if (n == 0)
        return;
    struct ev_node last = h[n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = i * EV_ARITY + 1;
        if (c >= n)
            break;
        uint32_t end = c + EV_ARITY < n ? c + EV_ARITY : n;
        uint32_t best = c;
        for (uint32_t k = c + 1; k < end; k++)
            if (ev_less(&h[k], &h[best]))
                best = k;
        if (!ev_less(&h[best], &last))
            break;
        h[i] = h[best];
        i = best;
    }
    h[i] = last;
}

/* The heap's earliest live node, NULL if none. */
static const struct ev_node *ev_heap_top(struct mroce_sim_evlist *l)
{
    while (l->hn && ev_stale(l, &l->heap[0]))
        ev_heap_pop(l);
    return l->hn ? &l->heap[0] : NULL;
}

/* ---- The wheel ---- */

static inline void ev_bit_clear(struct mroce_sim_evlist *l, uint32_t b)
{
    uint64_t *w = &l->bits[b >> 6];
    *w &= ~(UINT64_C(1) << (b & 63));
    if (!*w)
        l->sum[b >> 12] &= ~(UINT64_C(1) << ((b >> 6) & 63));
}

/* The first non-empty bucket at or after b (no wrap), or W. */
static uint32_t ev_bit_next(const struct mroce_sim_evlist *l, uint32_t b)
{
    if (b >= l->W)
        return l->W;
    uint32_t w = b >> 6;
    uint64_t m = l->bits[w] & (~UINT64_C(0) << (b & 63));
    if (m)
        return w << 6 | (uint32_t)__builtin_ctzll(m);
    uint32_t w1 = w + 1, nw = l->W >> 6;
    if (w1 >= nw)
        return l->W;
    uint32_t s = w1 >> 6, ns = (nw + 63) >> 6;
    uint64_t sm = l->sum[s] & (~UINT64_C(0) << (w1 & 63));
    for (;;) {
        if (sm) {
            uint32_t word = s << 6 | (uint32_t)__builtin_ctzll(sm);
            return word << 6 | (uint32_t)__builtin_ctzll(l->bits[word]);
        }
        if (++s >= ns)
            return l->W;
        sm = l->sum[s];
    }
}

/* The tick of the first non-empty bucket after cur, UINT64_MAX if none. */
static uint64_t ev_wheel_next(const struct mroce_sim_evlist *l)
{
    if (!l->in_wheel)
        return UINT64_MAX;
    uint32_t mask = l->W - 1;
    uint32_t from = (uint32_t)((l->cur + 1) & mask);
    uint32_t b = ev_bit_next(l, from);
    uint64_t d;
    if (b < l->W) {
        d = b - from;
    } else {
        b = ev_bit_next(l, 0);
        if (b >= from)
            return UINT64_MAX; /* cannot happen while in_wheel counts */
        d = (uint64_t)(l->W - from) + b;
    }
    return l->cur + 1 + d;
}

static bool ev_alloc_wheel(struct mroce_sim_evlist *l, uint32_t W)
{
    struct ev_vec *wh = calloc(W, sizeof(*wh));
    uint64_t *bits = calloc(W / 64, sizeof(*bits));
    uint64_t *sum = calloc((W + 4095) / 4096, sizeof(*sum));
    if (!wh || !bits || !sum) {
        free(wh);
        free(bits);
        free(sum);
        return false;
    }
    l->wheel = wh;
    l->bits = bits;
    l->sum = sum;
    l->W = W;
    return true;
}

static void ev_free_wheel(struct ev_vec *wh, uint32_t W, uint64_t *bits,
                          uint64_t *sum)
{
    for (uint32_t i = 0; wh && i < W; i++)
        free(wh[i].v);
    free(wh);
    free(bits);
    free(sum);
}

/* ---- Insert ---- */

/* Into the bottom at its place: after every node that is not later. */
static bool ev_bot_insert(struct mroce_sim_evlist *l, struct ev_node nd)
{
    struct ev_vec *b = &l->bot;
    if (b->n == b->cap && l->bot_head > 0) {
        memmove(b->v, b->v + l->bot_head, (b->n - l->bot_head) * sizeof(*b->v));
        b->n -= l->bot_head;
        l->bot_head = 0;
    }
    if (!ev_vec_reserve(b, b->n + 1))
        return false;
    uint32_t i = b->n;
    while (i > l->bot_head && ev_less(&nd, &b->v[i - 1])) {
        b->v[i] = b->v[i - 1];
        i--;
    }
    b->v[i] = nd;
    b->n++;
    return true;
}

/* The wheel when its bucket has room, else the bottom, the far heap or
 * a growing bucket; counts inserts that go far (sizing). */
static bool __attribute__((noinline))
ev_insert_slow(struct mroce_sim_evlist *l, const struct ev_node *ndp)
{
    struct ev_node nd = *ndp; /* by address: no copy on the fast path */
    uint64_t tick = nd.time >> l->shift;
    if (tick <= l->cur)
        return ev_bot_insert(l, nd);
    if (tick - l->cur >= l->W) {
        l->ep_far++;
        return ev_heap_push(l, nd);
    }
    uint32_t b = (uint32_t)tick & (l->W - 1);
    if (!l->wheel[b].cap && l->n_spare)
        l->wheel[b] = l->spare[--l->n_spare];
    if (!ev_vec_push(&l->wheel[b], nd))
        return false;
    if (l->wheel[b].n == 1)
        ev_bit_set(l, b);
    l->in_wheel++;
    return true;
}

/* The common case inline: a tick inside the wheel whose bucket has room
 * (d wraps around for ticks at or before cur). */
static inline bool ev_insert(struct mroce_sim_evlist *l, struct ev_node nd)
{
    uint64_t d = (nd.time >> l->shift) - l->cur - 1;
    if (d < l->W - 1) {
        uint32_t b = (uint32_t)(nd.time >> l->shift) & (l->W - 1);
        struct ev_vec *v = &l->wheel[b];
        if (v->n < v->cap) {
            v->v[v->n++] = nd;
            if (v->n == 1)
                ev_bit_set(l, b);
            l->in_wheel++;
            return true;
        }
    }
    return ev_insert_slow(l, &nd);
}

/* ---- Sizing ---- */

/* Re-inserts the wheel's nodes under a new tick and size; the bottom is
 * empty, the heap stays (its nodes move in as the wheel reaches them). */
static void ev_rebuild(struct mroce_sim_evlist *l, uint32_t W, unsigned shift)
{
    struct ev_vec *old = l->wheel;
    uint64_t *ob = l->bits, *os = l->sum;
    uint32_t oW = l->W;
    if (!ev_alloc_wheel(l, W))
        return; /* keep the old wheel */
    uint64_t cur_time = l->cur << l->shift;
    l->shift = shift;
    l->cur = cur_time >> shift;
    l->in_wheel = 0;
    for (uint32_t i = 0; i < oW; i++)
        for (uint32_t k = 0; k < old[i].n; k++)
            if (!ev_stale(l, &old[i].v[k]) && !ev_insert(l, old[i].v[k]))
                abort(); /* out of memory while moving: cannot recover */
    ev_free_wheel(old, oW, ob, os);
}

static unsigned ev_log2(uint64_t v)
{
    return v ? 63u - (unsigned)__builtin_clzll(v) : 0;
}

/* Sizes the wheel from the last epoch: a tick that holds about
 * EV_PER_TICK events at the rate they were popped, and W >= 8 /
 * EV_PER_TICK x the events pending, so that the wheel spans about 8
 * times the mean distance at which events are scheduled and only timers
 * go far (more buckets would span more and only cost memory). A
 * change of less than a factor 2 (tick) or 4 (W) is not worth a
 * rebuild. */
static void ev_resize(struct mroce_sim_evlist *l)
{
    uint64_t span = l->now > l->ep_t0 ? l->now - l->ep_t0 : 1;
    uint64_t pops = l->count - l->ep_count0;
    uint64_t inserts = pops + l->live - l->ep_live0 + l->ep_cancels;
    uint64_t tick = EV_PER_TICK * span / (pops ? pops : 1);
    unsigned shift = ev_log2(tick ? tick : 1);
    shift = shift > EV_MAX_SHIFT ? EV_MAX_SHIFT : shift;
    uint64_t w = EV_MIN_WHEEL;
    while (w * EV_PER_TICK < 8 * (uint64_t)l->live && w < EV_MAX_WHEEL)
        w *= 2;
    bool far = (uint64_t)l->ep_far * 16 > inserts;
    uint32_t W = (uint32_t)w;
    if (!(W >= 4 * l->W || 4 * W <= l->W || (far && W > l->W)))
        W = l->W;
    if (shift + 1 >= l->shift && shift <= l->shift + 1 && !far)
        shift = l->shift;
    l->ep_far = l->ep_cancels = 0;
    l->ep_count0 = l->count;
    l->ep_live0 = l->live;
    l->ep_t0 = l->now;
    l->ep_len = l->ep_len < EV_EPOCH ? l->ep_len * 4 : EV_EPOCH;
    if (W != l->W || shift != l->shift)
        ev_rebuild(l, W, shift);
}

/* ---- Advancing ---- */

static bool ev_bot_live(struct mroce_sim_evlist *l)
{
    while (l->bot_head < l->bot.n && ev_stale(l, &l->bot.v[l->bot_head]))
        l->bot_head++;
    if (l->bot_head < l->bot.n)
        return true;
    l->bot_head = l->bot.n = 0;
    return false;
}

/* Moves far nodes that the wheel now reaches into it. */
static void ev_migrate(struct mroce_sim_evlist *l)
{
    const struct ev_node *top;
    uint64_t end = l->cur + l->W < l->cur ? UINT64_MAX : l->cur + l->W;
    while ((top = ev_heap_top(l)) && (top->time >> l->shift) < end) {
        struct ev_node nd = *top;
        ev_heap_pop(l);
        if (!ev_insert(l, nd))
            abort(); /* out of memory while moving: cannot recover */
    }
}

/* An empty array back: kept for an empty bucket, or freed. */
static void ev_spare(struct mroce_sim_evlist *l, struct ev_vec v)
{
    if (v.cap && v.cap <= EV_SPARE_CAP && l->n_spare < EV_SPARES)
        l->spare[l->n_spare++] = (struct ev_vec){v.v, 0, v.cap};
    else
        free(v.v);
}

/* The tick of the first non-empty bucket after cur: the next bucket's
 * word of the bitmap inline (a tick holds about EV_PER_TICK events, so
 * the next one is near), else ev_wheel_next. */
static inline uint64_t ev_wheel_near(const struct mroce_sim_evlist *l)
{
    uint32_t from = (uint32_t)(l->cur + 1) & (l->W - 1);
    uint64_t m = l->bits[from >> 6] & (~UINT64_C(0) << (from & 63));
    if (m)
        return l->cur + 1 + (uint32_t)__builtin_ctzll(m) - (from & 63);
    return ev_wheel_next(l);
}

/* The bottom is empty: makes the next tick's events the bottom. Returns
 * false if no event is left. Stops before a tick that starts after
 * until (nothing moves then). The far heap's top may be a cancelled
 * node: a tick chosen for it finds its bucket empty (the wheel had
 * nothing earlier), ev_migrate drops it, and the loop goes on. */
static bool ev_advance(struct mroce_sim_evlist *l, uint64_t until)
{
    for (;;) {
        if (l->count - l->ep_count0 >= l->ep_len) {
            ev_resize(l); /* may bring nodes into the bottom */
            if (ev_bot_live(l))
                return true;
        }
        uint64_t tw = ev_wheel_near(l);
        uint64_t th = l->hn ? l->heap[0].time >> l->shift : UINT64_MAX;
        uint64_t t = tw < th ? tw : th;
        if (t == UINT64_MAX || (until >> l->shift) < t)
            return false;
        l->cur = t;
        uint32_t b = (uint32_t)t & (l->W - 1);
        struct ev_vec v = l->wheel[b];
        l->wheel[b] = (struct ev_vec){0};
        ev_spare(l, l->bot); /* empty */
        l->bot = v;
        l->bot_head = 0;
        if (v.n) {
            ev_bit_clear(l, b);
            l->in_wheel -= v.n;
            if (v.n > 1)
                ev_sort(l->bot.v, v.n);
        }
        if (l->hn && (l->heap[0].time >> l->shift) - t < l->W)
            ev_migrate(l); /* those of tick t join the bottom in order */
        if (l->bot.n && l->bot.v[0].slot == EV_NO_SLOT)
            return true; /* the head is live */
        if (ev_bot_live(l))
            return true;
    }
}

/* Makes the bottom's head the earliest live event if it is due by until. */
static bool ev_settle(struct mroce_sim_evlist *l, uint64_t until)
{
    if (!ev_bot_live(l) && !ev_advance(l, until))
        return false;
    return l->bot.v[l->bot_head].time <= until;
}

/* ---- Slots ---- */

static void ev_init_slots(struct ev_slot *s, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        s[i].next = i + 1;
        s[i].gen = 1;
        s[i].ord = EV_NO_ORD;
    }
}

static bool ev_grow_slots(struct mroce_sim_evlist *l)
{
    if (l->cap >= EV_MAX_SLOTS)
        return false;
    uint32_t cap = l->cap * 2 > EV_MAX_SLOTS ? EV_MAX_SLOTS : l->cap * 2;
    struct ev_slot *s = realloc(l->slots, cap * sizeof(*s));
    if (!s)
        return false;
    ev_init_slots(s, l->cap, cap);
    l->slots = s;
    l->free = l->cap; /* the free list was empty, or we would not grow */
    l->cap = cap;
    return true;
}

static void ev_slot_free(struct mroce_sim_evlist *l, uint32_t s)
{
    struct ev_slot *sl = &l->slots[s];
    sl->ord = EV_NO_ORD;
    if (++sl->gen == 0) /* keep handles nonzero */
        sl->gen = 1;
    sl->next = l->free;
    l->free = s;
}

/* ---- Public calls ---- */

struct mroce_sim_evlist *mroce_sim_ev_create(size_t hint)
{
    struct mroce_sim_evlist *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (hint == 0)
        hint = EV_DEFAULT_HINT;
    if (hint > EV_MAX_SLOTS)
        hint = EV_MAX_SLOTS;
    l->cap = (uint32_t)hint;
    l->shift = EV_SHIFT0;
    l->ep_len = EV_EPOCH0;
    l->slots = malloc(l->cap * sizeof(*l->slots));
    if (!l->slots || !ev_alloc_wheel(l, EV_MIN_WHEEL) ||
        !mroce_sim_ev_set_lps(l, 1)) {
        mroce_sim_ev_destroy(l);
        return NULL;
    }
    ev_init_slots(l->slots, 0, l->cap);
    return l;
}

void mroce_sim_ev_destroy(struct mroce_sim_evlist *l)
{
    if (!l)
        return;
    ev_free_wheel(l->wheel, l->W, l->bits, l->sum);
    free(l->bot.v);
    while (l->n_spare)
        free(l->spare[--l->n_spare].v);
    free(l->heap);
    free(l->slots);
    free(l->lp_seq);
    free(l);
}

size_t mroce_sim_ev_node_bytes(const struct mroce_sim_evlist *l)
{
    size_t n = (size_t)l->bot.cap + l->hcap;
    for (uint32_t i = 0; i < l->W; i++)
        n += l->wheel[i].cap;
    for (uint32_t i = 0; i < l->n_spare; i++)
        n += l->spare[i].cap;
    return n * sizeof(struct ev_node);
}

uint64_t mroce_sim_ev_now(const struct mroce_sim_evlist *l)
{
    return ev_now_inline(l);
}

uint64_t mroce_sim_ev_count(const struct mroce_sim_evlist *l)
{
    return l->count;
}

size_t mroce_sim_ev_pending(const struct mroce_sim_evlist *l)
{
    return l->live;
}

void mroce_sim_ev_stop(struct mroce_sim_evlist *l)
{
    l->stop = true;
}

/* ev_post_ord when the node does not go straight into its bucket. */
bool __attribute__((noinline))
ev_post_slow(struct mroce_sim_evlist *l, const struct ev_node *nd)
{
    if (!ev_insert_slow(l, nd))
        return false;
    l->live++;
    return true;
}

bool mroce_sim_ev_post(struct mroce_sim_evlist *l, uint64_t t_ps,
                       mroce_sim_ev_fn fn, void *obj, uint64_t arg)
{
    return ev_post_inline(l, t_ps, fn, obj, arg);
}

bool mroce_sim_ev_post_to(struct mroce_sim_evlist *l, uint64_t t_ps,
                          mroce_sim_ev_fn fn, void *obj, uint64_t arg,
                          uint32_t run_lp)
{
    return ev_post_to_inline(l, t_ps, fn, obj, arg, run_lp);
}

uint64_t mroce_sim_ev_take_key(struct mroce_sim_evlist *l)
{
    return ev_next_ord(l);
}

bool mroce_sim_ev_post_key(struct mroce_sim_evlist *l, uint64_t t_ps,
                           mroce_sim_ev_fn fn, void *obj, uint64_t arg,
                           uint64_t key, uint32_t run_lp)
{
    if (key == EV_NO_ORD || run_lp >= l->n_lps)
        return false;
    return ev_post_ord(l, t_ps, fn, obj, arg, key, run_lp);
}

mroce_sim_ev_handle mroce_sim_ev_at(struct mroce_sim_evlist *l, uint64_t t_ps,
                                    mroce_sim_ev_fn fn, void *obj, uint64_t arg)
{
    if (l->free >= l->cap && !ev_grow_slots(l))
        return 0;
    uint32_t s = l->free;
    uint64_t ord = ev_next_ord(l);
    struct ev_node nd = {.time = t_ps < l->now ? l->now : t_ps,
                         .ord = ord,
                         .fn = fn,
                         .obj = obj,
                         .arg = arg,
                         .slot = s,
                         .run_lp = l->lp};
    if (!ev_insert(l, nd))
        return 0;
    struct ev_slot *sl = &l->slots[s];
    l->free = sl->next;
    sl->ord = ord;
    l->live++;
    return (uint64_t)sl->gen << 32 | s;
}

bool mroce_sim_ev_set_lps(struct mroce_sim_evlist *l, uint32_t n)
{
    if (n <= l->n_lps)
        return true;
    if (n > MROCE_SIM_EV_MAX_LPS)
        return false;
    uint64_t *p = realloc(l->lp_seq, (size_t)n * sizeof(*p));
    if (!p)
        return false;
    memset(p + l->n_lps, 0, (size_t)(n - l->n_lps) * sizeof(*p));
    l->lp_seq = p;
    l->n_lps = n;
    return true;
}

uint32_t mroce_sim_ev_n_lps(const struct mroce_sim_evlist *l)
{
    return l->n_lps;
}

uint32_t mroce_sim_ev_set_lp(struct mroce_sim_evlist *l, uint32_t lp)
{
    uint32_t prev = l->lp;
    assert(lp < l->n_lps);
    l->lp = lp;
    return prev;
}

uint32_t mroce_sim_ev_lp(const struct mroce_sim_evlist *l)
{
    return l->lp;
}

uint64_t mroce_sim_ev_count_lp0(const struct mroce_sim_evlist *l)
{
    return l->count0;
}

mroce_sim_ev_handle mroce_sim_ev_after(struct mroce_sim_evlist *l,
                                       uint64_t delay_ps, mroce_sim_ev_fn fn,
                                       void *obj, uint64_t arg)
{
    uint64_t t = l->now + delay_ps;
    if (t < l->now) /* saturate rather than wrap into the past */
        t = MROCE_SIM_NEVER;
    return mroce_sim_ev_at(l, t, fn, obj, arg);
}

bool mroce_sim_ev_cancel(struct mroce_sim_evlist *l, mroce_sim_ev_handle h)
{
    uint32_t s = (uint32_t)h;
    uint32_t gen = (uint32_t)(h >> 32);
    if (h == 0 || s >= l->cap || l->slots[s].gen != gen ||
        l->slots[s].ord == EV_NO_ORD)
        return false;
    ev_slot_free(l, s); /* its node is now stale */
    l->live--;
    l->ep_cancels++;
    return true;
}

/* The earliest live time in a wheel bucket (unsorted). */
static uint64_t ev_bucket_min(const struct mroce_sim_evlist *l, uint32_t b)
{
    uint64_t m = MROCE_SIM_NEVER;
    for (uint32_t k = 0; k < l->wheel[b].n; k++) {
        const struct ev_node *nd = &l->wheel[b].v[k];
        if (nd->time < m && !ev_stale(l, nd))
            m = nd->time;
    }
    return m;
}

/* Without moving anything: the bottom's head, else the earliest of the
 * first non-empty buckets and the heap's top. */
uint64_t mroce_sim_ev_next_time(struct mroce_sim_evlist *l)
{
    if (ev_bot_live(l))
        return l->bot.v[l->bot_head].time;
    const struct ev_node *top = ev_heap_top(l);
    uint64_t m = top ? top->time : MROCE_SIM_NEVER;
    uint64_t saved = l->cur;
    for (uint64_t t; (t = ev_wheel_next(l)) != UINT64_MAX;) {
        if ((t << l->shift) > m)
            break;
        uint64_t bm = ev_bucket_min(l, (uint32_t)t & (l->W - 1));
        if (bm != MROCE_SIM_NEVER) {
            m = bm < m ? bm : m;
            break;
        }
        l->cur = t; /* only cancelled nodes there: look further */
    }
    l->cur = saved;
    return m;
}

/* Runs a node just popped from the bottom, unless it was cancelled. Its
 * fields are read before anything else (the handler may move the
 * bottom), and only a cancellable node's key is read. */
static inline void ev_fire(struct mroce_sim_evlist *l, const struct ev_node *p)
{
    uint64_t t = p->time, arg = p->arg;
    uint32_t slot = p->slot, run_lp = p->run_lp;
    mroce_sim_ev_fn fn = p->fn;
    void *obj = p->obj;
    if (slot != EV_NO_SLOT) {
        if (l->slots[slot].ord != p->ord)
            return; /* cancelled */
        ev_slot_free(l, slot);
    }
    l->live--;
    l->now = t;
    l->count++;
    l->count0 += run_lp == 0;
    l->lp = run_lp;
    fn(obj, arg, t);
}

bool mroce_sim_ev_step(struct mroce_sim_evlist *l)
{
    if (!ev_settle(l, MROCE_SIM_NEVER))
        return false;
    uint32_t lp = l->lp;
    ev_fire(l, &l->bot.v[l->bot_head++]);
    l->lp = lp;
    return true;
}

/* The loop reads the bottom directly: most events are a load, a compare
 * and a call. */
uint64_t mroce_sim_ev_run(struct mroce_sim_evlist *l, uint64_t until_ps)
{
    uint64_t start = l->count;
    uint32_t lp = l->lp;
    l->stop = false;
    while (!l->stop) {
        if (l->bot_head == l->bot.n) {
            l->bot_head = l->bot.n = 0;
            if (!ev_advance(l, until_ps))
                break;
            continue;
        }
        const struct ev_node *p = &l->bot.v[l->bot_head];
        if (p->time > until_ps)
            break;
        l->bot_head++;
        ev_fire(l, p);
    }
    if (!l->stop && until_ps > l->now && until_ps != MROCE_SIM_NEVER)
        l->now = until_ps;
    l->lp = lp;
    return l->count - start;
}
