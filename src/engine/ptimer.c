/* Path timers of a connection: a binary min-heap of its paths keyed by
 * the earliest of each path's RTO, tail-loss probe and PROBE times
 * (R-RTT-5, R-RTT-7, R-PATH-8), so that sending, acknowledging and
 * expiring cost O(log paths) instead of a scan of every path.
 *
 * A path is in the heap exactly while its key is not ENG_NEVER. The key
 * is recomputed by eng_ptimer_set whenever one of the three times of
 * that path changes. */
#include "engine/eng.h"

#define PT_NONE UINT16_MAX

/* Entries carry their key, so that sifting compares within the array. */
static void pt_put(struct mroce_conn *c, uint32_t i, struct eng_tent e)
{
    c->theap[i] = e;
    c->ptx[e.p].heap_pos = (uint16_t)i;
}

static void pt_up(struct mroce_conn *c, uint32_t i)
{
    struct eng_tent e = c->theap[i];
    while (i) {
        uint32_t up = (i - 1) / 2;
        if (c->theap[up].due <= e.due)
            break;
        pt_put(c, i, c->theap[up]);
        i = up;
    }
    pt_put(c, i, e);
}

static void pt_down(struct mroce_conn *c, uint32_t i)
{
    struct eng_tent e = c->theap[i];
    uint32_t n = c->theap_n;
    for (;;) {
        uint32_t j = 2 * i + 1;
        if (j >= n)
            break;
        if (j + 1 < n && c->theap[j + 1].due < c->theap[j].due)
            j++;
        if (e.due <= c->theap[j].due)
            break;
        pt_put(c, i, c->theap[j]);
        i = j;
    }
    pt_put(c, i, e);
}

static void pt_del(struct mroce_conn *c, uint16_t p)
{
    uint32_t i = c->ptx[p].heap_pos;
    struct eng_tent last = c->theap[--c->theap_n];
    c->ptx[p].heap_pos = PT_NONE;
    if (last.p == p)
        return;
    pt_put(c, i, last);
    pt_up(c, i);
    pt_down(c, c->ptx[last.p].heap_pos);
}

void eng_ptimer_init(struct mroce_conn *c, uint16_t p)
{
    c->ptx[p].heap_pos = PT_NONE;
    c->ptx[p].due = ENG_NEVER;
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
    uint64_t old = pt->due;
    if (due == old)
        return; /* in the heap exactly when not ENG_NEVER, as before */
    pt->due = due;
    if (old == ENG_NEVER) {
        pt_put(c, c->theap_n++, (struct eng_tent){due, p});
        pt_up(c, pt->heap_pos);
        return;
    }
    if (due == ENG_NEVER) {
        pt_del(c, p);
        return;
    }
    c->theap[pt->heap_pos].due = due;
    if (due < old)
        pt_up(c, pt->heap_pos);
    else
        pt_down(c, pt->heap_pos);
}

uint64_t eng_ptimer_next(const struct mroce_conn *c)
{
    return c->theap_n ? c->theap[0].due : ENG_NEVER;
}

/* A path whose earliest timer is due at `now`, or -1. The caller runs
 * its timers and re-keys it with eng_ptimer_set. */
int eng_ptimer_due(const struct mroce_conn *c, uint64_t now)
{
    if (!c->theap_n || c->theap[0].due > now)
        return -1;
    return c->theap[0].p;
}
