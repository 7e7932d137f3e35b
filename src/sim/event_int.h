/* The event list's insides, for the fast path of a post inlined where
 * the fabric posts (link.c, switch.c, nic.c) and for event.c. The model
 * and the API are event.h; nothing here is API: only src/sim includes
 * this, and only event.c changes the list other than through
 * ev_post_inline, ev_post_to_inline and ev_now_inline.
 *
 * Why inline: a fabric event costs a post, and the call to
 * mroce_sim_ev_post (its arguments, prologue and the node written
 * through it) was about a sixth of the event list's cost per packet
 * (docs/sim.md "Cost per packet"). */
#ifndef MROCE_SIM_EVENT_INT_H
#define MROCE_SIM_EVENT_INT_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/event.h"

/* A node holds the time, the order key (LP << MROCE_SIM_EV_SEQ_BITS |
 * that LP's sequence number), the handler and, for a cancellable event,
 * its slot index. Limits: 2^24 - 1 cancellable events pending, 2^20 LPs,
 * 2^44 events scheduled by one LP over a list's life. */
#define EV_NO_SLOT UINT32_MAX
#define EV_SEQ_MASK ((UINT64_C(1) << MROCE_SIM_EV_SEQ_BITS) - 1)
#define EV_SPARES 256 /* spare bucket arrays kept */

/* The handler travels in the node: an event posted without a handle
 * (mroce_sim_ev_post, most of them) touches nothing else. Only
 * cancellable events (mroce_sim_ev_at) hold a slot, which says whether
 * they are still pending. */
struct ev_node {
    uint64_t time;
    uint64_t ord; /* lp << MROCE_SIM_EV_SEQ_BITS | seq */
    mroce_sim_ev_fn fn;
    void *obj;
    uint64_t arg;
    uint32_t slot;   /* EV_NO_SLOT: not cancellable */
    uint32_t run_lp; /* the LP its handler runs as */
};

struct ev_slot {
    uint64_t ord;  /* of the pending event, EV_NO_ORD when free */
    uint32_t next; /* next free slot */
    uint32_t gen;  /* bumped when the slot is freed: stale handles miss */
};

struct ev_vec {
    struct ev_node *v;
    uint32_t n, cap;
};

struct mroce_sim_evlist {
    struct ev_vec bot; /* sorted, pops from bot_head */
    uint32_t bot_head;
    struct ev_vec *wheel; /* [W], bucket of tick t: t & (W - 1) */
    uint64_t *bits;       /* [W / 64] non-empty buckets */
    uint64_t *sum;        /* [W / 4096] non-zero words of bits */
    uint32_t W;
    unsigned shift; /* tick = time >> shift */
    uint64_t cur;   /* the bottom's tick; the wheel holds (cur, cur + W) */
    uint32_t in_wheel;
    struct ev_vec spare[EV_SPARES]; /* empty arrays for empty buckets */
    uint32_t n_spare;
    struct ev_node *heap; /* far: ticks >= cur + W when inserted */
    uint32_t hn, hcap;
    /* sizing statistics of the current epoch, kept off the hot paths:
     * pops are count - ep_count0, inserts are pops + the growth of live
     * + the cancels (every insert adds to live, every pop or cancel
     * takes one off) */
    uint32_t ep_far, ep_len, ep_cancels, ep_live0;
    uint64_t ep_count0;
    uint64_t ep_t0; /* time of the epoch's first pop */
    struct ev_slot *slots;
    uint32_t live;    /* pending events */
    uint32_t cap;     /* of slots */
    uint32_t free;    /* head of the free slot list, cap if empty */
    uint64_t *lp_seq; /* [n_lps]: next sequence number of each LP */
    uint32_t n_lps;
    uint32_t lp;     /* the context: LP of the running event, or the
                        driver's choice between runs */
    uint64_t now;    /* current time */
    uint64_t count;  /* events run */
    uint64_t count0; /* of which as LP 0 */
    bool stop;
};

/* Posts what the inline path does not: a bucket without room, the
 * current tick, the far heap (event.c). */
bool ev_post_slow(struct mroce_sim_evlist *l, const struct ev_node *nd);

static inline void ev_bit_set(struct mroce_sim_evlist *l, uint32_t b)
{
    l->bits[b >> 6] |= UINT64_C(1) << (b & 63);
    l->sum[b >> 12] |= UINT64_C(1) << ((b >> 6) & 63);
}

/* The context LP's next order key; that LP's counter advances. */
static inline uint64_t ev_next_ord(struct mroce_sim_evlist *l)
{
    assert(l->lp_seq[l->lp] <= EV_SEQ_MASK);
    return (uint64_t)l->lp << MROCE_SIM_EV_SEQ_BITS | l->lp_seq[l->lp]++;
}

/* Inserts an event without a slot. The common case, a tick inside the
 * wheel (d wraps around for ticks at or before cur) whose bucket has
 * room or can take a spare array, writes the node in place. */
static inline __attribute__((always_inline)) bool
ev_post_ord(struct mroce_sim_evlist *l, uint64_t t_ps, mroce_sim_ev_fn fn,
            void *obj, uint64_t arg, uint64_t ord, uint32_t run_lp)
{
    uint64_t t = t_ps < l->now ? l->now : t_ps, tick = t >> l->shift;
    if (tick - l->cur - 1 < l->W - 1) {
        uint32_t b = (uint32_t)tick & (l->W - 1);
        struct ev_vec *v = &l->wheel[b];
        if (!v->cap && l->n_spare) /* emptied buckets have no array */
            *v = l->spare[--l->n_spare];
        if (v->n < v->cap) {
            struct ev_node *nd = &v->v[v->n++];
            nd->time = t;
            nd->ord = ord;
            nd->fn = fn;
            nd->obj = obj;
            nd->arg = arg;
            nd->slot = EV_NO_SLOT;
            nd->run_lp = run_lp;
            if (v->n == 1)
                ev_bit_set(l, b);
            l->in_wheel++;
            l->live++;
            return true;
        }
    }
    struct ev_node nd = {.time = t,
                         .ord = ord,
                         .fn = fn,
                         .obj = obj,
                         .arg = arg,
                         .slot = EV_NO_SLOT,
                         .run_lp = run_lp};
    return ev_post_slow(l, &nd);
}

/* mroce_sim_ev_post, inline. */
static inline __attribute__((always_inline)) bool
ev_post_inline(struct mroce_sim_evlist *l, uint64_t t_ps, mroce_sim_ev_fn fn,
               void *obj, uint64_t arg)
{
    return ev_post_ord(l, t_ps, fn, obj, arg, ev_next_ord(l), l->lp);
}

/* mroce_sim_ev_post_to, inline. */
static inline __attribute__((always_inline)) bool
ev_post_to_inline(struct mroce_sim_evlist *l, uint64_t t_ps, mroce_sim_ev_fn fn,
                  void *obj, uint64_t arg, uint32_t run_lp)
{
    assert(run_lp < l->n_lps);
    return ev_post_ord(l, t_ps, fn, obj, arg, ev_next_ord(l), run_lp);
}

/* mroce_sim_ev_now, inline. */
static inline uint64_t ev_now_inline(const struct mroce_sim_evlist *l)
{
    return l->now;
}

#endif
