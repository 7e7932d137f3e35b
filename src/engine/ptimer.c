/* Path timers of a connection: a tournament (winner) tree over its paths
 * keyed by the earliest of each path's RTO, tail-loss probe and PROBE
 * times (R-RTT-5, R-RTT-7, R-PATH-8), so that sending, acknowledging and
 * expiring cost O(log paths) instead of a scan of every path.
 *
 * Path p is leaf tt_leaves + p; the leaves are not stored (a path's key
 * is pt->due, always exact). Internal node k (1 <= k < tt_leaves) holds
 * a LOWER BOUND (due, p) of its subtree, ordered by due and then by path
 * (the lower path first): no path below k is earlier, and the bound names
 * one of them, p, whose key was due when the node was last computed.
 * Every node is also no later than its children. Almost every re-key
 * moves a timer later (a send pushes the path's tail-loss probe out, an
 * ACK restarts or clears its RTO): that only writes pt->due, no walk, as
 * a later key leaves every bound above it true. A move earlier walks
 * from the leaf and stops at the first node already no later.
 *
 * So the root is no later than the connection's earliest path timer, and
 * it is that timer exactly when it names a path whose key is its due.
 * eng_ptimer_due refreshes a stale root (re-walks the named path's nodes
 * with its true key) before it answers, so paths expire in exactly the
 * order of an exact tree (earliest first, the lower path on a tie) and
 * never late; the connection's deadline (eng_ptimer_next) may be early,
 * which costs one wakeup that finds nothing due (eng_conn_due). */
#include "engine/eng.h"

/* Leaves (a power of two, at least 2) for n paths. */
uint32_t eng_ptimer_leaves(uint32_t n)
{
    uint32_t l = 2;
    while (l < n)
        l *= 2;
    return l;
}

/* No path has a timer: every key and node empty (mem.c, at connect). */
void eng_ptimer_reset(struct mroce_conn *c)
{
    for (uint32_t p = 0; p < c->n_alloc_paths; p++)
        c->ptx[p].due = ENG_NEVER;
    for (uint32_t k = 0; k < c->tt_leaves; k++)
        c->ttree[k] = (struct eng_tent){ENG_NEVER, 0};
}

/* The earlier of paths a and a + 1 (absent beyond n_alloc_paths), the
 * lower on a tie: exact, from their keys. */
static struct eng_tent pt_pair(const struct mroce_conn *c, uint32_t a)
{
    struct eng_tent w = {c->ptx[a].due, a};
    if (a + 1 < c->n_alloc_paths && c->ptx[a + 1].due < w.due)
        w = (struct eng_tent){c->ptx[a + 1].due, a + 1};
    return w;
}

/* w as node k's candidate against its sibling's bound: a left subtree
 * holds lower paths than its right sibling, so a tie goes to the left. */
static struct eng_tent pt_up(const struct eng_tent *t, uint32_t k,
                             struct eng_tent w)
{
    const struct eng_tent *s = &t[k ^ 1u];
    if (s->due < w.due || (s->due == w.due && (k & 1u)))
        return *s;
    return w;
}

/* p's key moved earlier: its ancestors take it, up to the first one that
 * is already no later (a bound of the new key, so all above it are). */
void eng_ptimer_lower(struct mroce_conn *c, uint32_t p)
{
    struct eng_tent *t = c->ttree;
    struct eng_tent w = pt_pair(c, p & ~1u);
    for (uint32_t k = (c->tt_leaves + p) >> 1;; k >>= 1) {
        if (t[k].due < w.due || (t[k].due == w.due && t[k].p <= w.p))
            return;
        t[k] = w;
        if (k == 1)
            return;
        w = pt_up(t, k, w);
    }
}

/* The root names p but p's key moved later: p's ancestors again. All of
 * them name p (a node names a path only while its child toward that path
 * does, with the same due), so each is recomputed; the root comes out
 * strictly later than it was. */
static void pt_refresh(struct mroce_conn *c, uint32_t p)
{
    struct eng_tent *t = c->ttree;
    struct eng_tent w = pt_pair(c, p & ~1u);
    for (uint32_t k = (c->tt_leaves + p) >> 1; k > 1; k >>= 1) {
        t[k] = w;
        w = pt_up(t, k, w);
    }
    t[1] = w;
}

/* The root, exact if its due is at or before `now`; else only a bound
 * later than `now`. */
static struct eng_tent pt_root(struct mroce_conn *c, uint64_t now)
{
    struct eng_tent r = c->ttree[1];
    while (r.due <= now && c->ptx[r.p].due != r.due) {
        pt_refresh(c, r.p);
        r = c->ttree[1];
    }
    return r;
}

/* A new path has no timer: a later key, no walk. */
void eng_ptimer_init(struct mroce_conn *c, uint16_t p)
{
    c->ptx[p].due = ENG_NEVER;
}

/* A path whose earliest timer is due at `now`, or -1: the earliest, the
 * lower path on a tie. The caller runs its timers and re-keys it with
 * eng_ptimer_set. */
int eng_ptimer_due(struct mroce_conn *c, uint64_t now)
{
    struct eng_tent r = pt_root(c, now);
    return r.due <= now ? (int)r.p : -1;
}

/* The earliest path timer, exact: the root refreshed until it is, or
 * ENG_NEVER (eng_conn_due, so that a deadline found early is set again
 * exactly). */
uint64_t eng_ptimer_exact(struct mroce_conn *c)
{
    return pt_root(c, ENG_NEVER - 1).due;
}
