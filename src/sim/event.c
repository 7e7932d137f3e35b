/* The event list; see event.h for the model. */
#include "sim/event.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* A heap node is 16 bytes so the four children of a node share one cache
 * line: the time, and a second key that packs the insertion sequence
 * (high 40 bits, compared after time) with the slot index (low 24 bits,
 * never decides the order because sequences are unique). Limits: 2^24
 * pending events, 2^40 events scheduled over a list's life (a week of
 * wall time at 2 M events/s).
 *
 * Cancellation is lazy: it frees the slot at once and leaves the node in
 * the heap; a node whose sequence no longer matches its slot's is skipped
 * when it reaches the top. Tracking every node's heap position for an
 * eager removal cost a random write into the slot array per sift step,
 * which halved the rate with 10^5 events pending. Callers that re-arm
 * often (host timers) cancel only when a deadline moves earlier. */
#define EV_SLOT_BITS 24
#define EV_SLOT_MASK ((1u << EV_SLOT_BITS) - 1)
#define EV_MAX_SLOTS (1u << EV_SLOT_BITS)
#define EV_ARITY 4
#define EV_DEFAULT_HINT 1024
#define EV_NO_SEQ UINT64_MAX

struct ev_node {
    uint64_t time;
    uint64_t key; /* seq << EV_SLOT_BITS | slot */
};

struct ev_slot {
    mroce_sim_ev_fn fn;
    void *obj;
    uint64_t arg;
    uint64_t seq;  /* of the pending event, EV_NO_SEQ when free */
    uint32_t next; /* next free slot */
    uint32_t gen;  /* bumped when the slot is freed: stale handles miss */
};

/* The heap array starts 3 nodes into a 64-byte aligned block, so that the
 * children of node i (4i+1 .. 4i+4) fill exactly one cache line. */
#define EV_LINE 64u
#define EV_HEAP_SKEW 3u

struct mroce_sim_evlist {
    struct ev_node *heap; /* heap_mem + EV_HEAP_SKEW */
    struct ev_node *heap_mem;
    struct ev_slot *slots;
    uint32_t n;     /* heap nodes, cancelled ones included */
    uint32_t live;  /* pending events */
    uint32_t cap;   /* of slots */
    uint32_t hcap;  /* of heap */
    uint32_t free;  /* head of the free slot list, cap if empty */
    uint64_t seq;   /* next insertion number */
    uint64_t now;   /* current time */
    uint64_t count; /* events run */
    bool stop;
};

static void ev_init_slots(struct ev_slot *s, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        s[i].next = i + 1;
        s[i].gen = 1;
        s[i].seq = EV_NO_SEQ;
    }
}

static struct ev_node *ev_heap_alloc(uint32_t cap)
{
    size_t bytes = ((size_t)cap + EV_HEAP_SKEW) * sizeof(struct ev_node);
    bytes = (bytes + EV_LINE - 1) / EV_LINE * EV_LINE;
    return aligned_alloc(EV_LINE, bytes);
}

struct mroce_sim_evlist *mroce_sim_ev_create(size_t hint)
{
    struct mroce_sim_evlist *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (hint == 0)
        hint = EV_DEFAULT_HINT;
    if (hint > EV_MAX_SLOTS)
        hint = EV_MAX_SLOTS;
    l->cap = l->hcap = (uint32_t)hint;
    l->heap_mem = ev_heap_alloc(l->hcap);
    l->heap = l->heap_mem + EV_HEAP_SKEW;
    l->slots = malloc(l->cap * sizeof(*l->slots));
    if (!l->heap_mem || !l->slots) {
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
    free(l->heap_mem);
    free(l->slots);
    free(l);
}

uint64_t mroce_sim_ev_now(const struct mroce_sim_evlist *l)
{
    return l->now;
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

/* ---- Heap ---- */

static inline bool ev_less(const struct ev_node *a, const struct ev_node *b)
{
    return a->time < b->time || (a->time == b->time && a->key < b->key);
}

/* Moves nd up from hole i until its parent is smaller. */
static void ev_sift_up(struct ev_node *h, uint32_t i, struct ev_node nd)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / EV_ARITY;
        if (!ev_less(&nd, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = nd;
}

/* Removes the root. Floyd's variant: the hole walks down to a leaf along
 * the smaller children (no comparison with the moved node on the way, as
 * it came from the bottom and usually belongs there), then the last node
 * is sifted up from that leaf. */
static void ev_pop_root(struct mroce_sim_evlist *l)
{
    struct ev_node *h = l->heap;
    uint32_t n = --l->n;
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
        h[i] = h[best];
        i = best;
    }
    ev_sift_up(h, i, last);
}

static inline uint32_t ev_slot_of(const struct ev_node *nd)
{
    return (uint32_t)(nd->key & EV_SLOT_MASK);
}

static inline bool ev_stale(const struct mroce_sim_evlist *l,
                            const struct ev_node *nd)
{
    return l->slots[ev_slot_of(nd)].seq != nd->key >> EV_SLOT_BITS;
}

/* Discards cancelled nodes from the top, so heap[0] is live if n > 0. */
static void ev_purge(struct mroce_sim_evlist *l)
{
    while (l->n > 0 && ev_stale(l, &l->heap[0]))
        ev_pop_root(l);
}

uint64_t mroce_sim_ev_next_time(struct mroce_sim_evlist *l)
{
    ev_purge(l);
    return l->n ? l->heap[0].time : MROCE_SIM_NEVER;
}

/* ---- Slots ---- */

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

/* The heap may hold more nodes than slots (cancelled nodes linger). */
static bool ev_grow_heap(struct mroce_sim_evlist *l)
{
    if (l->hcap >= UINT32_MAX / 2)
        return false;
    uint32_t cap = l->hcap * 2;
    struct ev_node *m = ev_heap_alloc(cap);
    if (!m)
        return false;
    memcpy(m + EV_HEAP_SKEW, l->heap, l->n * sizeof(*m));
    free(l->heap_mem);
    l->heap_mem = m;
    l->heap = m + EV_HEAP_SKEW;
    l->hcap = cap;
    return true;
}

static void ev_slot_free(struct mroce_sim_evlist *l, uint32_t s)
{
    struct ev_slot *sl = &l->slots[s];
    sl->seq = EV_NO_SEQ;
    if (++sl->gen == 0) /* keep handles nonzero */
        sl->gen = 1;
    sl->next = l->free;
    l->free = s;
    l->live--;
}

/* ---- Public calls ---- */

mroce_sim_ev_handle mroce_sim_ev_at(struct mroce_sim_evlist *l, uint64_t t_ps,
                                    mroce_sim_ev_fn fn, void *obj, uint64_t arg)
{
    if (l->free >= l->cap && !ev_grow_slots(l))
        return 0;
    if (l->n >= l->hcap && !ev_grow_heap(l))
        return 0;
    uint32_t s = l->free;
    struct ev_slot *sl = &l->slots[s];
    l->free = sl->next;
    assert(l->seq < (1ull << (64 - EV_SLOT_BITS)));
    sl->fn = fn;
    sl->obj = obj;
    sl->arg = arg;
    sl->seq = l->seq++;
    l->live++;
    struct ev_node nd = {.time = t_ps < l->now ? l->now : t_ps,
                         .key = sl->seq << EV_SLOT_BITS | s};
    ev_sift_up(l->heap, l->n++, nd);
    return (uint64_t)sl->gen << 32 | s;
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
        l->slots[s].seq == EV_NO_SEQ)
        return false;
    ev_slot_free(l, s); /* its node is now stale */
    return true;
}

bool mroce_sim_ev_step(struct mroce_sim_evlist *l)
{
    ev_purge(l);
    if (l->n == 0)
        return false;
    struct ev_node top = l->heap[0];
    uint32_t s = ev_slot_of(&top);
    struct ev_slot sl = l->slots[s];
    ev_pop_root(l);
    ev_slot_free(l, s);
    l->now = top.time;
    l->count++;
    sl.fn(sl.obj, sl.arg, top.time);
    return true;
}

uint64_t mroce_sim_ev_run(struct mroce_sim_evlist *l, uint64_t until_ps)
{
    uint64_t start = l->count;
    l->stop = false;
    while (!l->stop && mroce_sim_ev_next_time(l) <= until_ps &&
           mroce_sim_ev_step(l))
        ;
    if (!l->stop && until_ps > l->now && until_ps != MROCE_SIM_NEVER)
        l->now = until_ps;
    return l->count - start;
}
