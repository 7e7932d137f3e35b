/* Per-context scheduling: which connection sends next (the ready set) and
 * whose timer fires next (a binary min-heap of connection deadlines), so
 * that mroce_ctx_tx, next_expiry and on_expiry cost O(log n) in the
 * number of connections instead of a scan of all of them.
 *
 * Connections carry a rank: their position in creation order (oldest 0).
 * The transmit round-robin visits ranks in descending order from a cursor
 * and wraps, which is the order of the connection list the scan used, so
 * the packet order on the wire is unchanged. The ready set is a two-level
 * bitmap over ranks: set, clear and "highest set rank <= r" are O(1) for
 * up to 4096 connections per summary word. Held groups (R-PATH-14, below)
 * let a walk with some planes' ports full pass over the connections that
 * would find no port again. */
#include <string.h>

#include "engine/eng.h"

#define SCHED_NONE UINT32_MAX

/* ---- rank bitmap ---- */

static uint32_t sched_top(uint64_t w)
{
    return 63u - (uint32_t)__builtin_clzll(w);
}

/* Bits 0..i of a word. */
static uint64_t sched_upto(uint32_t i)
{
    return ~0ull >> (63u - i % 64u);
}

static bool sched_test(const struct eng_bits *b, uint32_t i)
{
    return (b->w[i / 64] >> (i % 64)) & 1;
}

static void sched_set(struct eng_bits *b, uint32_t i)
{
    eng_bits_set(b, i);
}

static void sched_clear(struct eng_bits *b, uint32_t i)
{
    eng_bits_clear(b, i);
}

/* sched_prev below i's word: through the summary words. */
__attribute__((noinline)) static uint32_t
sched_prev_far(const struct eng_bits *b, uint32_t i)
{
    if (i < 64)
        return SCHED_NONE;
    uint32_t j = i / 64 - 1, si = j / 64; /* highest word left to try */
    uint64_t sm = b->s[si] & sched_upto(j);
    while (!sm) {
        if (!si)
            return SCHED_NONE;
        sm = b->s[--si];
    }
    uint32_t w = si * 64 + sched_top(sm);
    return w * 64 + sched_top(b->w[w]);
}

/* Highest set bit <= i, or SCHED_NONE: inline for the usual case, a bit
 * in i's own word (every pick, several per packet). */
static inline uint32_t sched_prev(const struct eng_bits *b, uint32_t i)
{
    uint64_t m = b->w[i / 64] & sched_upto(i);
    if (m)
        return i / 64 * 64 + sched_top(m);
    return sched_prev_far(b, i);
}

static size_t sched_words(uint32_t cap)
{
    return cap / 64;
}

static size_t sched_sum_words(uint32_t cap)
{
    return (cap + 4095) / 4096;
}

static void sched_bits_free(struct mroce_ctx *ctx, struct eng_bits *b)
{
    eng_free(ctx, b->w);
    eng_free(ctx, b->s);
}

/* A copy of `old` (cap bits) with room for ncap bits. */
static int sched_bits_grow(struct mroce_ctx *ctx, struct eng_bits *b,
                           uint32_t cap, uint32_t ncap)
{
    struct eng_bits n = {
        .w = eng_alloc(ctx, sched_words(ncap) * sizeof(uint64_t)),
        .s = eng_alloc(ctx, sched_sum_words(ncap) * sizeof(uint64_t))};
    if (!n.w || !n.s) {
        sched_bits_free(ctx, &n);
        return MROCE_ENOMEM;
    }
    if (cap) {
        memcpy(n.w, b->w, sched_words(cap) * sizeof(uint64_t));
        memcpy(n.s, b->s, sched_sum_words(cap) * sizeof(uint64_t));
    }
    sched_bits_free(ctx, b);
    *b = n;
    return 0;
}

static void *sched_ptrs_grow(struct mroce_ctx *ctx, void *old, uint32_t n,
                             uint32_t ncap)
{
    void *p = eng_alloc(ctx, ncap * sizeof(struct mroce_conn *));
    if (p && n)
        memcpy(p, old, n * sizeof(struct mroce_conn *));
    return p;
}

static int sched_held_grow(struct mroce_ctx *ctx, uint32_t ncap)
{
    struct eng_sched *s = &ctx->sched;
    for (uint32_t g = 0; g < ENG_HELD_GROUPS; g++)
        if (sched_bits_grow(ctx, &s->held[g].bits, s->cap, ncap))
            return MROCE_ENOMEM;
    return 0;
}

/* Doubles every per-rank table; connection creation only. */
static int sched_grow(struct mroce_ctx *ctx)
{
    struct eng_sched *s = &ctx->sched;
    uint32_t ncap = s->cap ? 2 * s->cap : 64;
    struct mroce_conn **rank = sched_ptrs_grow(ctx, s->by_rank, s->cap, ncap);
    struct mroce_conn **heap = sched_ptrs_grow(ctx, s->heap, s->heap_n, ncap);
    if (!rank || !heap || sched_bits_grow(ctx, &s->ready, s->cap, ncap) ||
        sched_bits_grow(ctx, &s->due, s->cap, ncap) ||
        sched_bits_grow(ctx, &s->acks, s->cap, ncap) ||
        sched_held_grow(ctx, ncap)) {
        eng_free(ctx, rank);
        eng_free(ctx, heap);
        return MROCE_ENOMEM;
    }
    eng_free(ctx, s->by_rank);
    eng_free(ctx, s->heap);
    s->by_rank = rank;
    s->heap = heap;
    s->cap = ncap;
    return 0;
}

/* ---- deadline heap ---- */

static void sched_heap_put(struct eng_sched *s, uint32_t i,
                           struct mroce_conn *c)
{
    s->heap[i] = c;
    c->heap_pos = i;
}

static void sched_sift_up(struct eng_sched *s, uint32_t i)
{
    struct mroce_conn *c = s->heap[i];
    while (i) {
        uint32_t up = (i - 1) / 2;
        if (s->heap[up]->deadline <= c->deadline)
            break;
        sched_heap_put(s, i, s->heap[up]);
        i = up;
    }
    sched_heap_put(s, i, c);
}

static void sched_sift_down(struct eng_sched *s, uint32_t i)
{
    struct mroce_conn *c = s->heap[i];
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= s->heap_n)
            break;
        if (k + 1 < s->heap_n &&
            s->heap[k + 1]->deadline < s->heap[k]->deadline)
            k++;
        if (c->deadline <= s->heap[k]->deadline)
            break;
        sched_heap_put(s, i, s->heap[k]);
        i = k;
    }
    sched_heap_put(s, i, c);
}

/* After every change of the heap: what eng_ctx_next_expiry reads. */
static void sched_note_top(struct eng_sched *s)
{
    s->top = s->heap_n ? s->heap[0]->deadline : ENG_NEVER;
}

static void sched_heap_del(struct eng_sched *s, struct mroce_conn *c)
{
    uint32_t i = c->heap_pos;
    struct mroce_conn *last = s->heap[--s->heap_n];
    c->heap_pos = SCHED_NONE;
    if (last == c)
        return;
    sched_heap_put(s, i, last);
    sched_sift_up(s, i);
    sched_sift_down(s, last->heap_pos);
}

/* The connection's cached deadline changed: re-key it. A connection is in
 * the heap exactly while its deadline is not ENG_NEVER. */
void eng_sched_timer(struct mroce_conn *c)
{
    struct eng_sched *s = &c->ctx->sched;
    if (c->heap_pos == SCHED_NONE) {
        if (c->deadline == ENG_NEVER)
            return;
        sched_heap_put(s, s->heap_n++, c);
        sched_sift_up(s, c->heap_pos);
    } else if (c->deadline == ENG_NEVER) {
        sched_heap_del(s, c);
    } else if (c->heap_pos &&
               s->heap[(c->heap_pos - 1) / 2]->deadline > c->deadline) {
        sched_sift_up(s, c->heap_pos); /* earlier than its parent */
    } else {
        sched_sift_down(s, c->heap_pos); /* else at most later */
    }
    sched_note_top(s);
}

/* Takes every connection due at `now` out of the heap into the due set;
 * eng_sched_next_due then hands them out in list order. A deadline that
 * was only a bound (eng_conn_due) moves later and stays in the heap. */
void eng_sched_collect_due(struct mroce_ctx *ctx, uint64_t now)
{
    struct eng_sched *s = &ctx->sched;
    while (s->heap_n && s->heap[0]->deadline <= now) {
        struct mroce_conn *c = s->heap[0];
        if (!eng_conn_due(c, now))
            continue; /* it re-keyed itself later than now */
        sched_heap_del(s, c);
        c->deadline = ENG_NEVER;
        sched_set(&s->due, c->rank);
    }
    sched_note_top(s);
}

struct mroce_conn *eng_sched_next_due(struct mroce_ctx *ctx)
{
    struct eng_sched *s = &ctx->sched;
    if (!ctx->n_conns)
        return NULL;
    uint32_t r = sched_prev(&s->due, ctx->n_conns - 1);
    if (r == SCHED_NONE)
        return NULL;
    sched_clear(&s->due, r);
    return s->by_rank[r];
}

/* ---- ready set ---- */

/* Highest ready rank <= i, or SCHED_NONE: of the whole ready set, or of
 * the ready connections a some-planes walk visits (sched_prev_walk). */
typedef uint32_t (*sched_prev_fn)(const struct eng_sched *s, uint32_t i);

static inline uint32_t sched_prev_ready(const struct eng_sched *s, uint32_t i)
{
    return sched_prev(&s->ready, i);
}

/* The next ready connection in round-robin order from the cursor; inlined
 * with its prev, which is a constant at every call. */
static inline __attribute__((always_inline)) struct mroce_conn *
sched_pick_by(struct mroce_ctx *ctx, sched_prev_fn prev)
{
    struct eng_sched *s = &ctx->sched;
    if (!ctx->n_conns)
        return NULL;
    uint32_t top = ctx->n_conns - 1;
    uint32_t from = s->tx_next && s->tx_next - 1 < top ? s->tx_next - 1 : top;
    uint32_t r = prev(s, from);
    if (r == SCHED_NONE)
        r = prev(s, top); /* wrap to the newest */
    return r == SCHED_NONE ? NULL : s->by_rank[r];
}

/* The ready connection after c in round-robin order (c itself when it
 * is the only one; NULL when none is ready). */
static inline __attribute__((always_inline)) struct mroce_conn *
sched_after_by(const struct mroce_conn *c, sched_prev_fn prev)
{
    const struct eng_sched *s = &c->ctx->sched;
    uint32_t r = c->rank ? prev(s, c->rank - 1) : SCHED_NONE;
    if (r == SCHED_NONE)
        r = prev(s, c->ctx->n_conns - 1);
    return r == SCHED_NONE ? NULL : s->by_rank[r];
}

struct mroce_conn *eng_sched_pick(struct mroce_ctx *ctx)
{
    return sched_pick_by(ctx, sched_prev_ready);
}

struct mroce_conn *eng_sched_after(const struct mroce_conn *c)
{
    return sched_after_by(c, sched_prev_ready);
}

/* eng_sched_pick_ack past its summary-word test. */
struct mroce_conn *eng_sched_pick_ack_any(const struct mroce_ctx *ctx)
{
    uint32_t r = sched_prev(&ctx->sched.acks, ctx->n_conns - 1);
    return r == SCHED_NONE ? NULL : ctx->sched.by_rank[r];
}

static bool sched_any(const struct eng_bits *b, uint32_t cap)
{
    for (size_t i = 0; i < sched_sum_words(cap); i++)
        if (b->s[i])
            return true;
    return false;
}

/* A transmit call found nothing to send: busy again only if a
 * connection stays ready (held, R-PATH-14) or owes an ACK. */
void eng_sched_settle(struct mroce_ctx *ctx)
{
    struct eng_sched *s = &ctx->sched;
    if (sched_sum_words(s->cap) == 1) /* one summary word each: no loop */
        s->busy = (s->ready.s[0] | s->acks.s[0]) != 0;
    else
        s->busy = sched_any(&s->ready, s->cap) || sched_any(&s->acks, s->cap);
}

/* ---- held groups (R-PATH-14) ---- */

/* A connection tried with some planes' ports full whose data waits only
 * for those is held: it stays in the ready set, in the group of the open
 * planes and plane version it was held at. Trying it again while both
 * are as then, and it has not changed (eng_sched_ready, a packet sent:
 * out of its group), would return 0 again; a walk over every ready
 * connection that skipped those (one plane of four failing left 98% of
 * the visits skips, 48% of the run) becomes a walk that passes over the
 * group of the current key a word at a time. The sim's flow control
 * flips tx_planes between a few masks from one call to the next: a group
 * per mask keeps each held connection out of the walks until the mask
 * differs from the one it was held at, with no visit to find that out. */

static bool sched_held_key(const struct eng_held *h,
                           const struct mroce_ctx *ctx)
{
    return h->planes == ctx->dev.tx_planes && h->plane_ver == ctx->plane_ver;
}

/* The group that has the current key (members and key), or
 * ENG_HELD_NONE. */
static uint32_t sched_held_find(const struct mroce_ctx *ctx)
{
    for (uint32_t g = 0; g < ENG_HELD_GROUPS; g++)
        if (ctx->sched.held[g].n && sched_held_key(&ctx->sched.held[g], ctx))
            return g;
    return ENG_HELD_NONE;
}

/* Group g's members are no longer held as a group (they stay ready):
 * O(its members). */
static void sched_held_wake(struct eng_sched *s, uint32_t g)
{
    struct eng_held *h = &s->held[g];
    for (uint32_t i = 0; h->n && i < sched_sum_words(s->cap); i++) {
        for (uint64_t sm = h->bits.s[i]; sm; sm &= sm - 1) {
            uint32_t w = i * 64 + (uint32_t)__builtin_ctzll(sm);
            for (uint64_t b = h->bits.w[w]; b; b &= b - 1)
                s->by_rank[w * 64 + (uint32_t)__builtin_ctzll(b)]->held_group =
                    ENG_HELD_NONE;
            h->bits.w[w] = 0;
        }
        h->bits.s[i] = 0;
    }
    s->n_held -= h->n;
    h->n = 0;
}

/* The group of the current key: the one that has it, else an empty one,
 * else one of another key (its members are walked anyway: they differ
 * from the current key). Becomes the walk's excluded group. */
static uint32_t sched_held_group(struct mroce_ctx *ctx)
{
    struct eng_sched *s = &ctx->sched;
    if (s->excl != ENG_HELD_NONE && s->held[s->excl].n &&
        sched_held_key(&s->held[s->excl], ctx))
        return s->excl;
    uint32_t free = sched_held_find(ctx);
    if (free != ENG_HELD_NONE)
        return s->excl = free;
    for (free = 0; free < ENG_HELD_GROUPS && s->held[free].n; free++)
        ;
    if (free == ENG_HELD_GROUPS) {
        free = ctx->plane_ver % ENG_HELD_GROUPS; /* any will do */
        sched_held_wake(s, free);
    }
    s->held[free].planes = ctx->dev.tx_planes;
    s->held[free].plane_ver = ctx->plane_ver;
    return s->excl = free;
}

/* c was tried and is held: the walks of the current key pass over it. */
__attribute__((noinline)) void eng_sched_hold(struct mroce_conn *c)
{
    struct eng_sched *s = &c->ctx->sched;
    if (c->held_group != ENG_HELD_NONE)
        eng_sched_unhold(c);
    uint32_t g = sched_held_group(c->ctx);
    sched_set(&s->held[g].bits, c->rank);
    s->held[g].n++;
    s->n_held++;
    c->held_group = (uint8_t)g;
}

/* c changed or is tried again: out of its group. */
__attribute__((noinline)) void eng_sched_unhold(struct mroce_conn *c)
{
    struct eng_sched *s = &c->ctx->sched;
    struct eng_held *h = &s->held[c->held_group];
    sched_clear(&h->bits, c->rank);
    h->n--;
    s->n_held--;
    c->held_group = ENG_HELD_NONE;
}

/* Before a some-planes walk: which group, if any, has the current key. */
__attribute__((noinline)) void eng_sched_held_begin(struct mroce_ctx *ctx)
{
    ctx->sched.excl = sched_held_find(ctx);
}

/* Highest ready rank <= i outside the excluded group: a word at a time
 * over the ready set's words that have one. */
static uint32_t sched_prev_walk(const struct eng_sched *s, uint32_t i)
{
    if (s->excl == ENG_HELD_NONE)
        return sched_prev(&s->ready, i);
    const uint64_t *x = s->held[s->excl].bits.w;
    for (;;) {
        uint32_t r = sched_prev(&s->ready, i);
        if (r == SCHED_NONE)
            return SCHED_NONE;
        uint64_t m = s->ready.w[r / 64] & ~x[r / 64] & sched_upto(r);
        if (m)
            return r / 64 * 64 + sched_top(m);
        if (r < 64)
            return SCHED_NONE;
        i = r / 64 * 64 - 1;
    }
}

/* eng_sched_pick and eng_sched_after for the some-planes walk. */
__attribute__((noinline)) struct mroce_conn *
eng_sched_pick_held(struct mroce_ctx *ctx)
{
    return sched_pick_by(ctx, sched_prev_walk);
}

__attribute__((noinline)) struct mroce_conn *
eng_sched_after_held(const struct mroce_conn *c)
{
    return sched_after_by(c, sched_prev_walk);
}

/* ---- membership ---- */

int eng_sched_add(struct mroce_ctx *ctx, struct mroce_conn *c)
{
    struct eng_sched *s = &ctx->sched;
    if (ctx->n_conns == s->cap && sched_grow(ctx))
        return MROCE_ENOMEM;
    c->rank = ctx->n_conns;
    c->heap_pos = SCHED_NONE;
    s->by_rank[c->rank] = c;
    sched_clear(&s->ready, c->rank);
    sched_clear(&s->due, c->rank);
    sched_clear(&s->acks, c->rank);
    for (uint32_t g = 0; g < ENG_HELD_GROUPS; g++)
        sched_clear(&s->held[g].bits, c->rank);
    c->held_group = ENG_HELD_NONE;
    eng_sched_timer(c);
    return 0;
}

static void sched_move_bit(struct eng_bits *b, uint32_t from, uint32_t to)
{
    if (sched_test(b, from))
        sched_set(b, to);
    else
        sched_clear(b, to);
}

/* Called before n_conns drops: later ranks close the gap, O(n) on the
 * control path only. The cursor moves as the list's did (to c->next). */
void eng_sched_del(struct mroce_ctx *ctx, struct mroce_conn *c)
{
    struct eng_sched *s = &ctx->sched;
    uint32_t r = c->rank;
    if (c->heap_pos != SCHED_NONE) {
        sched_heap_del(s, c);
        sched_note_top(s);
    }
    if (c->held_group != ENG_HELD_NONE)
        eng_sched_unhold(c);
    if (s->tx_next > r) /* at c: to the next older; above: shifts down */
        s->tx_next--;
    for (uint32_t k = r; k + 1 < ctx->n_conns; k++) {
        s->by_rank[k] = s->by_rank[k + 1];
        s->by_rank[k]->rank = k;
        sched_move_bit(&s->ready, k + 1, k);
        sched_move_bit(&s->due, k + 1, k);
        sched_move_bit(&s->acks, k + 1, k);
        for (uint32_t g = 0; g < ENG_HELD_GROUPS; g++)
            sched_move_bit(&s->held[g].bits, k + 1, k);
    }
    sched_clear(&s->ready, ctx->n_conns - 1);
    sched_clear(&s->due, ctx->n_conns - 1);
    sched_clear(&s->acks, ctx->n_conns - 1);
    for (uint32_t g = 0; g < ENG_HELD_GROUPS; g++)
        sched_clear(&s->held[g].bits, ctx->n_conns - 1);
}

void eng_sched_release(struct mroce_ctx *ctx)
{
    struct eng_sched *s = &ctx->sched;
    eng_free(ctx, s->by_rank);
    eng_free(ctx, s->heap);
    sched_bits_free(ctx, &s->ready);
    sched_bits_free(ctx, &s->due);
    sched_bits_free(ctx, &s->acks);
    for (uint32_t g = 0; g < ENG_HELD_GROUPS; g++)
        sched_bits_free(ctx, &s->held[g].bits);
    memset(s, 0, sizeof(*s));
}

size_t eng_sched_bytes(const struct mroce_ctx *ctx)
{
    uint32_t cap = ctx->sched.cap;
    return 2 * cap * sizeof(struct mroce_conn *) +
           (3 + ENG_HELD_GROUPS) * (sched_words(cap) + sched_sum_words(cap)) *
               sizeof(uint64_t);
}
