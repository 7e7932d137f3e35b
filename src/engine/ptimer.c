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

static uint64_t pt_key(const struct mroce_conn *c, uint16_t p)
{
    return c->ptx[p].due;
}

static void pt_put(struct mroce_conn *c, uint32_t i, uint16_t p)
{
    c->theap[i] = p;
    c->ptx[p].heap_pos = (uint16_t)i;
}

static void pt_up(struct mroce_conn *c, uint32_t i)
{
    uint16_t p = c->theap[i];
    uint64_t k = pt_key(c, p);
    while (i) {
        uint32_t up = (i - 1) / 2;
        if (pt_key(c, c->theap[up]) <= k)
            break;
        pt_put(c, i, c->theap[up]);
        i = up;
    }
    pt_put(c, i, p);
}

static void pt_down(struct mroce_conn *c, uint32_t i)
{
    uint16_t p = c->theap[i];
    uint64_t k = pt_key(c, p);
    for (;;) {
        uint32_t j = 2 * i + 1;
        if (j >= c->theap_n)
            break;
        if (j + 1 < c->theap_n &&
            pt_key(c, c->theap[j + 1]) < pt_key(c, c->theap[j]))
            j++;
        if (k <= pt_key(c, c->theap[j]))
            break;
        pt_put(c, i, c->theap[j]);
        i = j;
    }
    pt_put(c, i, p);
}

static void pt_del(struct mroce_conn *c, uint16_t p)
{
    uint32_t i = c->ptx[p].heap_pos;
    uint16_t last = c->theap[--c->theap_n];
    c->ptx[p].heap_pos = PT_NONE;
    if (last == p)
        return;
    pt_put(c, i, last);
    pt_up(c, i);
    pt_down(c, c->ptx[last].heap_pos);
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
        pt_put(c, c->theap_n++, p);
        pt_up(c, pt->heap_pos);
    } else if (due == ENG_NEVER) {
        pt_del(c, p);
    } else if (due < old) {
        pt_up(c, pt->heap_pos);
    } else {
        pt_down(c, pt->heap_pos);
    }
}

uint64_t eng_ptimer_next(const struct mroce_conn *c)
{
    return c->theap_n ? c->ptx[c->theap[0]].due : ENG_NEVER;
}

/* A path whose earliest timer is due at `now`, or -1. The caller runs
 * its timers and re-keys it with eng_ptimer_set. */
int eng_ptimer_due(const struct mroce_conn *c, uint64_t now)
{
    if (!c->theap_n || c->ptx[c->theap[0]].due > now)
        return -1;
    return c->theap[0];
}
