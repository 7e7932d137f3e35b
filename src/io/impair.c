/* The impairment layer; see impair.h. */
#include "io/impair.h"

#include <stdlib.h>
#include <string.h>

struct imp_slot {
    uint64_t due;
    uint64_t seq; /* breaks ties: equal due times leave in queue order */
    struct mroce_pkt_meta meta;
    uint32_t len;
    uint8_t *buf;
};

struct mroce_impair_q {
    struct mroce_impair cfg;
    uint64_t rng;
    bool bad; /* Gilbert-Elliott state */
    uint32_t n_slots, slot_size;
    struct imp_slot *slots;
    uint32_t *heap; /* min-heap of slot indices by (due, seq) */
    uint32_t n_heap;
    uint32_t *free; /* stack of free slot indices */
    uint32_t n_free;
    uint64_t seq;
    uint8_t *arena;
    struct mroce_impair_stats st;
};

/* ---- the generator (splitmix64) ---- */

static uint64_t imp_next(struct mroce_impair_q *q)
{
    uint64_t z = (q->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* True with probability p (never draws for p <= 0). */
static bool imp_chance(struct mroce_impair_q *q, double p)
{
    if (p <= 0)
        return false;
    return (double)(imp_next(q) >> 11) * 0x1.0p-53 < p;
}

/* ---- creation ---- */

bool mroce_impair_active(const struct mroce_impair *c)
{
    return c->loss > 0 || c->burst_enter > 0 || c->reorder > 0 ||
           c->duplicate > 0 || c->delay_ns > 0;
}

static bool imp_prob_ok(double p)
{
    return p >= 0 && p <= 1;
}

static bool imp_cfg_ok(const struct mroce_impair *c)
{
    return imp_prob_ok(c->loss) && imp_prob_ok(c->burst_enter) &&
           imp_prob_ok(c->burst_exit) && imp_prob_ok(c->reorder) &&
           imp_prob_ok(c->duplicate);
}

int mroce_impair_new(const struct mroce_impair *cfg, uint32_t slots,
                     uint32_t slot_size, struct mroce_impair_q **out)
{
    *out = NULL;
    if (!cfg || !imp_cfg_ok(cfg) || slots == 0 || slot_size == 0)
        return MROCE_EINVAL;
    struct mroce_impair_q *q = calloc(1, sizeof(*q));
    if (!q)
        return MROCE_ENOMEM;
    q->cfg = *cfg;
    q->rng = cfg->seed;
    q->n_slots = slots;
    q->slot_size = slot_size;
    q->slots = calloc(slots, sizeof(*q->slots));
    q->heap = calloc(slots, sizeof(*q->heap));
    q->free = calloc(slots, sizeof(*q->free));
    q->arena = malloc((size_t)slots * slot_size);
    if (!q->slots || !q->heap || !q->free || !q->arena) {
        mroce_impair_free(q);
        return MROCE_ENOMEM;
    }
    for (uint32_t i = 0; i < slots; i++) {
        q->slots[i].buf = q->arena + (size_t)i * slot_size;
        q->free[q->n_free++] = slots - 1 - i;
    }
    *out = q;
    return 0;
}

void mroce_impair_free(struct mroce_impair_q *q)
{
    if (!q)
        return;
    free(q->arena);
    free(q->free);
    free(q->heap);
    free(q->slots);
    free(q);
}

/* ---- the delay queue (a binary heap) ---- */

static bool imp_before(const struct mroce_impair_q *q, uint32_t a, uint32_t b)
{
    const struct imp_slot *x = &q->slots[a], *y = &q->slots[b];
    return x->due < y->due || (x->due == y->due && x->seq < y->seq);
}

static void imp_swap(uint32_t *h, uint32_t i, uint32_t j)
{
    uint32_t t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void imp_sift_up(struct mroce_impair_q *q, uint32_t i)
{
    while (i > 0 && imp_before(q, q->heap[i], q->heap[(i - 1) / 2])) {
        imp_swap(q->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void imp_sift_down(struct mroce_impair_q *q, uint32_t i)
{
    for (;;) {
        uint32_t m = i, l = 2 * i + 1, r = 2 * i + 2;
        if (l < q->n_heap && imp_before(q, q->heap[l], q->heap[m]))
            m = l;
        if (r < q->n_heap && imp_before(q, q->heap[r], q->heap[m]))
            m = r;
        if (m == i)
            return;
        imp_swap(q->heap, i, m);
        i = m;
    }
}

/* Copies the packet into a free slot due at `due`; false if none is free
 * or the packet does not fit. */
static bool imp_hold(struct mroce_impair_q *q, uint64_t due, const uint8_t *buf,
                     uint32_t len, const struct mroce_pkt_meta *meta)
{
    if (q->n_free == 0 || len > q->slot_size) {
        q->st.overflow++;
        return false;
    }
    uint32_t s = q->free[--q->n_free];
    struct imp_slot *sl = &q->slots[s];
    sl->due = due;
    sl->seq = q->seq++;
    sl->meta = *meta;
    sl->len = len;
    memcpy(sl->buf, buf, len);
    q->heap[q->n_heap++] = s;
    imp_sift_up(q, q->n_heap - 1);
    return true;
}

uint64_t mroce_impair_next_due(const struct mroce_impair_q *q)
{
    return q->n_heap ? q->slots[q->heap[0]].due : UINT64_MAX;
}

int mroce_impair_pop(struct mroce_impair_q *q, uint64_t now_ns, uint8_t *buf,
                     size_t cap, struct mroce_pkt_meta *meta)
{
    if (q->n_heap == 0 || q->slots[q->heap[0]].due > now_ns)
        return 0;
    uint32_t s = q->heap[0];
    struct imp_slot *sl = &q->slots[s];
    if (sl->len > cap)
        return MROCE_ENOBUFS;
    memcpy(buf, sl->buf, sl->len);
    *meta = sl->meta;
    q->heap[0] = q->heap[--q->n_heap];
    imp_sift_down(q, 0);
    q->free[q->n_free++] = s;
    return (int)sl->len;
}

/* ---- fates ---- */

/* Gilbert-Elliott: move between the good and the bad state, then lose the
 * packet if the channel is bad. A burst lasts 1/burst_exit packets on
 * average. */
static bool imp_burst_lost(struct mroce_impair_q *q)
{
    if (q->cfg.burst_enter <= 0)
        return false;
    if (!q->bad && imp_chance(q, q->cfg.burst_enter)) {
        q->bad = true;
        q->st.bursts++;
    } else if (q->bad && imp_chance(q, q->cfg.burst_exit)) {
        q->bad = false;
    }
    return q->bad;
}

enum mroce_impair_fate mroce_impair_apply(struct mroce_impair_q *q,
                                          uint64_t now_ns, const uint8_t *buf,
                                          uint32_t len,
                                          const struct mroce_pkt_meta *meta)
{
    const struct mroce_impair *c = &q->cfg;
    q->st.packets++;
    if (imp_burst_lost(q)) {
        q->st.lost++;
        q->st.burst_lost++;
        return MROCE_IMPAIR_DROP;
    }
    if (imp_chance(q, c->loss)) {
        q->st.lost++;
        return MROCE_IMPAIR_DROP;
    }
    uint64_t due = now_ns + c->delay_ns;
    if (imp_chance(q, c->duplicate) && imp_hold(q, due, buf, len, meta))
        q->st.dup++;
    if (imp_chance(q, c->reorder) &&
        imp_hold(q, due + c->reorder_ns, buf, len, meta)) {
        q->st.reordered++;
        return MROCE_IMPAIR_HELD;
    }
    if (c->delay_ns && imp_hold(q, due, buf, len, meta)) {
        q->st.delayed++;
        return MROCE_IMPAIR_HELD;
    }
    return MROCE_IMPAIR_PASS;
}

void mroce_impair_get_stats(const struct mroce_impair_q *q,
                            struct mroce_impair_stats *out)
{
    *out = q->st;
}
