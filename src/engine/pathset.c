/* Path choice in O(1) (R-PATH-13): bitmaps over a connection's paths say
 * which are ACTIVE, idle, without room for a full packet, slow, and have
 * an RTT sample. Each is updated when that path changes (a packet sent,
 * transmissions resolved, its state, window or RTT), so choosing a path
 * for a packet is a few word operations and a find-next-set from the
 * round-robin position, not a scan that ranks every path. The classes
 * and their order are those of R-PATH-13; the result is the path the
 * scan would pick. */
#include "engine/eng.h"

#define PS_WORDS (ENG_MAX_PATHS / 64)

static inline void ps_put(uint64_t *b, uint16_t p, bool on)
{
    uint64_t m = (uint64_t)1 << (p % 64);
    b[p / 64] = (b[p / 64] & ~m) | (-(uint64_t)on & m);
}

static uint32_t ps_words(const struct mroce_conn *c)
{
    return (c->n_paths + 63) / 64;
}

/* ps_room of a path with data in flight: a full packet more fits both
 * its PSN window and its window. */
static inline bool ps_room_out(const struct mroce_conn *c,
                               const struct path_tx *pt)
{
    return pt->next_psn - pt->una < c->path_window &&
           pt->inflight + eng_pkt_charge(c) <= pt->cc.cwnd;
}

/* Room for a full packet (path_room of R-PATH-13 at MTU size); a path
 * with nothing out has it whatever its window. */
static bool ps_room(const struct mroce_conn *c, const struct path_tx *pt)
{
    if (!pt->inflight)
        return pt->next_psn - pt->una < c->path_window;
    return ps_room_out(c, pt);
}

/* R-PATH-13: slow when its SRTT is above ENG_SLOW_K x the connection's
 * smallest sample. */
static bool ps_slow(const struct mroce_conn *c, const struct path_tx *pt)
{
    return pt->srtt && !eng_path_fast(c, pt);
}

/* p progressed without an RTT sample (an ACK of another path covered
 * its packet, R-ACK-100): its state, idleness and room may change, its
 * RTT class does not. */
void eng_pset_acked(struct mroce_conn *c, uint16_t p)
{
    const struct path_tx *pt = &c->ptx[p];
    struct eng_pset *s = &c->pset;
    ps_put(s->b[PS_ACT], p, pt->state == PATH_ACTIVE);
    ps_put(s->b[PS_IDLE], p, pt->una == pt->next_psn);
    ps_put(s->b[PS_ROOM], p, ps_room(c, pt));
}

/* eng_pset_acked for every path in `paths` (a bitmap over the
 * connection's paths), each bitmap word written once (an ACK's dsn_cum
 * covers packets of many paths, R-ACK-100). */
void eng_pset_acked_paths(struct mroce_conn *c, const uint64_t *paths)
{
    struct eng_pset *s = &c->pset;
    for (uint32_t w = 0; w < ps_words(c); w++) {
        uint64_t act = 0, idle = 0, room = 0, m = paths[w];
        for (uint64_t r = m; r; r &= r - 1) {
            const struct path_tx *pt = &c->ptx[w * 64 + __builtin_ctzll(r)];
            uint64_t bit = r & -r;
            act |= pt->state == PATH_ACTIVE ? bit : 0;
            idle |= pt->una == pt->next_psn ? bit : 0;
            room |= ps_room(c, pt) ? bit : 0;
        }
        s->b[PS_ACT][w] = (s->b[PS_ACT][w] & ~m) | act;
        s->b[PS_IDLE][w] = (s->b[PS_IDLE][w] & ~m) | idle;
        s->b[PS_ROOM][w] = (s->b[PS_ROOM][w] & ~m) | room;
    }
}

/* Path p changed: its bits again. */
void eng_pset_update(struct mroce_conn *c, uint16_t p)
{
    const struct path_tx *pt = &c->ptx[p];
    eng_pset_acked(c, p);
    ps_put(c->pset.b[PS_KNOWN], p, pt->srtt != 0);
    ps_put(c->pset.b[PS_SLOW], p, ps_slow(c, pt));
}

/* p sent a packet: of its bits only these two can change (its state and
 * RTT did not), and it is no longer idle. With that packet in flight,
 * ps_room's case of a path with nothing out does not arise. */
void eng_pset_sent(struct mroce_conn *c, uint16_t p)
{
    ps_put(c->pset.b[PS_IDLE], p, false);
    ps_put(c->pset.b[PS_ROOM], p, ps_room_out(c, &c->ptx[p]));
}

/* The connection's RTT floor fell: which paths are slow changes. */
void eng_pset_floor(struct mroce_conn *c)
{
    for (uint16_t p = 0; p < c->n_paths; p++)
        ps_put(c->pset.b[PS_SLOW], p, ps_slow(c, &c->ptx[p]));
}

/* ps_planes when the planes changed: the mask again. */
__attribute__((noinline)) static const uint64_t *
ps_planes_build(struct mroce_conn *c, struct eng_pmask *m, uint64_t open_planes)
{
    struct mroce_ctx *ctx = c->ctx;
    for (uint16_t p = 0; p < c->n_paths; p++) {
        uint8_t k = c->ptx[p].plane;
        ps_put(m->b, p, !eng_plane_down(ctx, k) && ((open_planes >> k) & 1));
    }
    m->ver = ctx->plane_ver;
    m->open = open_planes;
    m->valid = true;
    return m->b;
}

/* Paths whose plane is up and, if `open`, may take data now (R-PATH-14,
 * R-PATH-15); each mask is kept until the planes change (inline: every
 * pick asks). */
static inline const uint64_t *ps_planes(struct mroce_conn *c, bool open)
{
    const struct mroce_ctx *ctx = c->ctx;
    struct eng_pmask *m = &c->pset.planes[open];
    uint64_t open_planes = open ? ctx->dev.tx_planes : UINT64_MAX;
    if (m->valid && m->ver == ctx->plane_ver && m->open == open_planes)
        return m->b;
    return ps_planes_build(c, m, open_planes);
}

/* The first set bit of b at or after `from`, cyclically; -1 if none. */
static inline int ps_next(const uint64_t *b, uint32_t n, uint32_t from)
{
    uint32_t words = (n + 63) / 64;
    if (from >= n)
        from = 0;
    uint32_t w = from / 64;
    uint64_t m = b[w] & (~(uint64_t)0 << (from % 64));
    for (uint32_t i = 0; i <= words; i++) {
        if (m)
            return (int)(w * 64 + (uint32_t)__builtin_ctzll(m));
        w = w + 1 < words ? w + 1 : 0;
        m = b[w];
    }
    return -1;
}

/* The paths of R-PATH-13 class r (RANK_PROVEN: the fast ones, among
 * which eng_pset_pick looks for proven ones) for a packet that may not
 * go to `avoid` (-1: none) but as RANK_OWN. */
static void ps_class(const struct mroce_conn *c, const uint64_t *ok, int avoid,
                     int r, uint64_t *m)
{
    const struct eng_pset *s = &c->pset;
    uint32_t words = ps_words(c); /* once: m may alias c for the compiler */
    for (uint32_t w = 0; w < words; w++) {
        uint64_t cand = s->b[PS_ACT][w] & s->b[PS_ROOM][w] & ok[w], own = 0;
        if (avoid >= 0 && (uint32_t)avoid / 64 == w) {
            own = cand & ((uint64_t)1 << (avoid % 64));
            cand &= ~own;
        }
        uint64_t slow = s->b[PS_SLOW][w], idle = s->b[PS_IDLE][w];
        uint64_t known = s->b[PS_KNOWN][w];
        switch (r) {
        case RANK_IDLE_KNOWN:
            m[w] = cand & idle & known & ~slow;
            break;
        case RANK_IDLE:
            m[w] = cand & idle & ~known;
            break;
        case RANK_PROVEN:
        case RANK_FAST:
            m[w] = cand & ~idle & ~slow;
            break;
        case RANK_SLOW:
            m[w] = cand & slow;
            break;
        default:
            m[w] = own;
        }
    }
}

/* R-PATH-13 class 3: proven among the fast non-idle paths, first from
 * the round-robin position; retransmissions only, so the walk is rare. */
static int ps_proven(struct mroce_conn *c, uint64_t *fast, uint64_t now)
{
    int p;
    while ((p = ps_next(fast, c->n_paths, c->rr_path)) >= 0) {
        if (eng_path_proven(c, &c->ptx[p], now))
            return p;
        ps_put(fast, (uint16_t)p, false);
    }
    return -1;
}

/* ps_next for one word that has a bit set. */
static int ps_next1(uint64_t m, uint32_t n, uint32_t from)
{
    uint64_t at = from >= n ? m : m & (~(uint64_t)0 << from);
    return (int)__builtin_ctzll(at ? at : m);
}

/* ps_best for up to 64 paths: every class from one word each, in
 * registers, the first non-empty one searched (same classes and order
 * as ps_class and ps_best). */
static int ps_best1(struct mroce_conn *c, const uint64_t *ok, int avoid,
                    uint64_t now, int *cls)
{
    const struct eng_pset *s = &c->pset;
    uint64_t cand = s->b[PS_ACT][0] & s->b[PS_ROOM][0] & ok[0], own = 0;
    if (avoid >= 0) {
        own = cand & ((uint64_t)1 << avoid);
        cand &= ~own;
    }
    uint64_t slow = s->b[PS_SLOW][0], idle = s->b[PS_IDLE][0];
    uint64_t known = s->b[PS_KNOWN][0], fast = cand & ~idle & ~slow;
    uint64_t m;
    int r = RANK_IDLE_KNOWN; /* each class tested in turn: no table */
    if ((m = cand & idle & known & ~slow) || (r++, m = cand & idle & ~known))
        goto found;
    r = RANK_PROVEN;
    if (avoid >= 0 && fast) {
        uint64_t proven = fast; /* ps_proven clears the unproven */
        int p = ps_proven(c, &proven, now);
        if (p >= 0) {
            *cls = r;
            return p;
        }
    }
    if ((r++, m = fast) || (r++, m = cand & slow) || (r++, m = own))
        goto found;
    *cls = RANK_NONE;
    return -1;
found:
    *cls = r;
    return ps_next1(m, c->n_paths, c->rr_path);
}

static int ps_best_any(struct mroce_conn *c, const uint64_t *ok, int avoid,
                       uint64_t now, int *cls);

/* The best class's first path from the round-robin position and its
 * class (RANK_NONE when no path qualifies); the classes are computed
 * one at a time, best first, and the first usually has one. */

static inline int ps_best(struct mroce_conn *c, const uint64_t *ok, int avoid,
                          uint64_t now, int *cls)
{
    if (c->n_paths <= 64)
        return ps_best1(c, ok, avoid, now, cls);
    return ps_best_any(c, ok, avoid, now, cls);
}

/* ps_best for more than 64 paths (not inlined: ps_best1 is the pick's
 * common case, whose prologue stays short). */
__attribute__((noinline)) static int ps_best_any(struct mroce_conn *c,
                                                 const uint64_t *ok, int avoid,
                                                 uint64_t now, int *cls)
{
    uint64_t m[PS_WORDS];
    for (int r = RANK_IDLE_KNOWN; r < RANK_NONE; r++) {
        if (r == RANK_PROVEN && avoid < 0)
            continue; /* new data has no proven class */
        ps_class(c, ok, avoid, r, m);
        int p = r == RANK_PROVEN ? ps_proven(c, m, now)
                                 : ps_next(m, c->n_paths, c->rr_path);
        if (p >= 0) {
            *cls = r;
            return p;
        }
    }
    *cls = RANK_NONE;
    return -1;
}

/* R-PATH-14: some path that could take the packet waits for its
 * plane's port. */
static bool ps_held(struct mroce_conn *c, const uint64_t *up_open)
{
    const uint64_t *up = ps_planes(c, false);
    const struct eng_pset *s = &c->pset;
    for (uint32_t w = 0; w < ps_words(c); w++)
        if (s->b[PS_ACT][w] & s->b[PS_ROOM][w] & up[w] & ~up_open[w])
            return true;
    return false;
}

/* R-TAIL-100: a path's RTT estimate, its latest sample (a queue that
 * builds shows there before the SRTT moves); a path without one (its
 * packets resolved through dsn_cum, R-ACK-100) counts as a typical path
 * of the connection: the latest SRTT of any. */
static uint64_t ps_rtt(const struct mroce_conn *c, const struct path_tx *pt)
{
    return pt->last_rtt ? pt->last_rtt : c->rtt_hint;
}

/* R-TAIL-100: the paths for new data that only `left` bytes follow. When
 * they drain at the granted rate in less than the RTT floor, `ok` narrows
 * (into m) to the paths with room whose estimate is at most the lowest
 * such estimate plus that drain time: a slower path would deliver the
 * packet after the rest. Otherwise (or without a hint) ok itself. */
static const uint64_t *ps_tail_narrow(struct mroce_conn *c, const uint64_t *ok,
                                      uint64_t slack, uint64_t *m);

static inline const uint64_t *ps_tail(struct mroce_conn *c, const uint64_t *ok,
                                      uint64_t left, uint64_t *m)
{
    if (!c->rate_hint_mbps || !c->rtt_floor)
        return ok;
    uint64_t slack = eng_drain_ns(c, (int64_t)left);
    if (slack >= c->rtt_floor)
        return ok;
    return ps_tail_narrow(c, ok, slack, m);
}

/* ps_tail's narrowing, apart (not inlined): it runs only at a
 * connection's tail, and every pick keeps a short prologue without it. */
__attribute__((noinline)) static const uint64_t *
ps_tail_narrow(struct mroce_conn *c, const uint64_t *ok, uint64_t slack,
               uint64_t *m)
{
    const struct eng_pset *s = &c->pset;
    uint32_t words = ps_words(c);
    uint64_t best = UINT64_MAX;
    for (uint32_t w = 0; w < words; w++) {
        m[w] = s->b[PS_ACT][w] & s->b[PS_ROOM][w] & ok[w];
        for (uint64_t b = m[w]; b; b &= b - 1) {
            uint64_t t = ps_rtt(c, &c->ptx[w * 64 + __builtin_ctzll(b)]);
            best = t < best ? t : best;
        }
    }
    for (uint32_t w = 0; w < words; w++)
        for (uint64_t b = m[w]; b; b &= b - 1) {
            uint32_t p = w * 64 + (uint32_t)__builtin_ctzll(b);
            if (ps_rtt(c, &c->ptx[p]) > best + slack)
                m[w] &= ~((uint64_t)1 << (p % 64));
        }
    return best == UINT64_MAX ? ok : m;
}

/* R-PATH-13, R-PATH-17: the path for a packet of `bytes` (room is judged
 * for a full packet), or -1. An open run's path competes with the best
 * class found and wins a tie (eng_path_rank classes it as when the run
 * began). */
int eng_pset_pick(struct mroce_conn *c, int avoid, uint32_t bytes, uint64_t now)
{
    const uint64_t *ok = ps_planes(c, true);
    uint64_t tail[PS_WORDS];
    if (avoid < 0) {
        uint64_t charge = c->unsent < c->mtu ? c->unsent : c->mtu;
        ok = ps_tail(c, ok, c->unsent - charge, tail);
    }
    int cls, p = ps_best(c, ok, avoid, now, &cls);
    if (eng_path_run_open(c) &&
        (ok[c->run_path / 64] >> c->run_path % 64 & 1)) {
        int r = eng_path_rank(c, c->run_path, avoid, bytes, now);
        if (r < RANK_NONE && r <= cls) {
            p = (int)c->run_path;
            cls = r;
        }
    }
    if (p < 0 && !eng_planes_all_open(c->ctx) && ps_held(c, ok))
        c->plane_held = true;
    if (p >= 0 && eng_mem_psn_room(c, &c->ptx[p]))
        return -1; /* out of memory: as if the path were full */
    if (p >= 0)
        c->rr_path = (uint32_t)p + 1;
    return p;
}
