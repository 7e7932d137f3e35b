/* Path timers of a connection: a tournament (winner) tree over its paths
 * keyed by the earliest of each path's RTO, tail-loss probe and PROBE
 * times (R-RTT-5, R-RTT-7, R-PATH-8), so that sending, acknowledging and
 * expiring cost O(log paths) instead of a scan of every path.
 *
 * Path p is leaf tt_leaves + p; the leaves are not stored (a path's key
 * is pt->due). Internal node k (1 <= k < tt_leaves) holds the earliest
 * (due, p) of its subtree, the lower path on a tie, so the root is the
 * connection's earliest path timer. A change walks from the leaf to
 * the root, one sibling compared per level, and stops where a node comes
 * out as it was: no sift, and no moves of other paths' entries as a
 * heap's re-keying had (two per data packet: its send and its ACK). */
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
 * lower on a tie. */
static struct eng_tent pt_pair(const struct mroce_conn *c, uint32_t a)
{
    struct eng_tent w = {c->ptx[a].due, a};
    if (a + 1 < c->n_alloc_paths && c->ptx[a + 1].due < w.due)
        w = (struct eng_tent){c->ptx[a + 1].due, a + 1};
    return w;
}

/* p's key changed: its ancestors again, up to the first one that keeps
 * another path (whose key did not change). A left subtree holds lower
 * paths than its right sibling, so a tie goes to the left. */
static void pt_fix(struct mroce_conn *c, uint32_t p)
{
    struct eng_tent *t = c->ttree;
    struct eng_tent w = pt_pair(c, p & ~1u);
    for (uint32_t k = (c->tt_leaves + p) >> 1;; k >>= 1) {
        if (t[k].p == w.p && w.p != p)
            return;
        t[k] = w;
        if (k == 1)
            return;
        struct eng_tent s = t[k ^ 1u];
        if ((k & 1u) ? s.due <= w.due : s.due < w.due)
            w = s;
    }
}

void eng_ptimer_init(struct mroce_conn *c, uint16_t p)
{
    c->ptx[p].due = ENG_NEVER;
    pt_fix(c, p);
}

/* p's RTO, probe or PROBE time changed: re-key it. */
void eng_ptimer_set(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    uint64_t due = pt->rto_at;
    if (pt->pto_at < due)
        due = pt->pto_at;
    if (pt->probe_at < due)
        due = pt->probe_at;
    if (due == pt->due)
        return;
    pt->due = due;
    pt_fix(c, p);
}

/* A path whose earliest timer is due at `now`, or -1. The caller runs
 * its timers and re-keys it with eng_ptimer_set. */
int eng_ptimer_due(const struct mroce_conn *c, uint64_t now)
{
    if (c->ttree[1].due > now)
        return -1;
    return c->ttree[1].p;
}
