/* Loss across paths (R-LOSS-8): on each plane, the paths that have data
 * unresolved and no tail-loss probe pending, in the order of their newest
 * data transmission (a circular doubly linked list through the paths,
 * from the plane's head, its oldest; the head's predecessor is the
 * newest). Rule 1's time for a path is its newest send time plus a window
 * that is the same for every path of the plane, and rule 2 applies only
 * to the path whose newest packet is the connection's oldest, so the head
 * alone decides when the plane's next path is late: O(1) per ACK and per
 * packet instead of a scan of the paths. */
#include "engine/eng.h"
#include "engine/fault.h"

#define RK_NONE UINT16_MAX
#define RACK_REO_NS 1000 /* ns: the reorder window's fixed part */

void eng_rack_init(struct mroce_conn *c)
{
    for (uint32_t k = 0; k < c->ctx->dev.n_planes; k++)
        c->rack[k].head = RK_NONE;
    for (uint32_t p = 0; p < c->n_alloc_paths; p++)
        c->ptx[p].rk_in = false;
}

static void rack_unlink(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    struct eng_rack *w = &c->rack[pt->plane];
    if (pt->rk_next == p) { /* the only one */
        w->head = RK_NONE;
    } else {
        c->ptx[pt->rk_prev].rk_next = pt->rk_next;
        c->ptx[pt->rk_next].rk_prev = pt->rk_prev;
        if (w->head == p)
            w->head = pt->rk_next;
    }
    pt->rk_in = false;
}

/* Links p after `prev`, or (RK_NONE) at the head. */
static void rack_link_after(struct mroce_conn *c, uint16_t p, uint16_t prev)
{
    struct path_tx *pt = &c->ptx[p];
    struct eng_rack *w = &c->rack[pt->plane];
    pt->rk_in = true;
    if (w->head == RK_NONE) {
        pt->rk_prev = pt->rk_next = p;
        w->head = p;
        return;
    }
    uint16_t after = prev == RK_NONE ? c->ptx[w->head].rk_prev : prev;
    uint16_t next = c->ptx[after].rk_next;
    pt->rk_prev = after;
    pt->rk_next = next;
    c->ptx[after].rk_next = p;
    c->ptx[next].rk_prev = p;
    if (prev == RK_NONE)
        w->head = p;
}

/* Links p as its plane's newest. */
static void rack_link_last(struct mroce_conn *c, uint16_t p)
{
    uint16_t head = c->rack[c->ptx[p].plane].head;
    rack_link_after(c, p, head == RK_NONE ? RK_NONE : c->ptx[head].rk_prev);
}

/* p just sent data: it is now the plane's newest. When it was the
 * oldest (round-robin spraying makes that the usual case) the head moves
 * past it and nothing else: the circle puts it last. The plane's
 * R-LOSS-8 time depends on its oldest path alone (rack_at): rack_min
 * moves only when that was p or there was none. */
void eng_rack_sent(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    struct eng_rack *w = &c->rack[pt->plane];
    uint16_t head = w->head;
    pt->tlp_done = false;
    if (head == p) {
        w->head = pt->rk_next;
    } else {
        if (pt->rk_in)
            rack_unlink(c, p);
        rack_link_last(c, p);
    }
    if (head == p || head == RK_NONE)
        eng_rack_update(c);
}

/* p goes in or out of its plane's order (eng_rack_check). A path that
 * comes back (its probe answered with data still out) goes in by its
 * newest send time: a walk from the oldest end, short because it is old. */
void eng_rack_move(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    if (pt->rk_in) {
        rack_unlink(c, p);
        return;
    }
    uint16_t head = c->rack[pt->plane].head;
    uint16_t prev = RK_NONE, q = head;
    while (q != RK_NONE && c->ptx[q].last_send <= pt->last_send) {
        prev = q;
        q = c->ptx[q].rk_next;
        if (q == head) /* past the newest */
            q = RK_NONE;
    }
    rack_link_after(c, p, prev);
}

/* R-LOSS-8: the RTT a packet of this plane may take without being late:
 * the larger of the latest delivered one's and the recent highest. */
static uint64_t rack_rtt(const struct eng_rack *w)
{
    return w->hi > w->rtt ? w->hi : w->rtt;
}

/* R-LOSS-8: the reorder window R. */
static uint64_t rack_reo(const struct mroce_conn *c, const struct eng_rack *w)
{
    uint64_t rtt = w->rtt > c->rtt_floor ? w->rtt : c->rtt_floor;
    return rtt / 4 + RACK_REO_NS;
}

/* R-LOSS-8 rule 2: once everything sent before x is resolved, x should
 * arrive one RTT after its send, and not before the latest delivered
 * packet's ACK plus x's own drain at the granted rate (plus what the
 * peer may hold when x did not ask for an ACK at once, R-ACK-1). */
static uint64_t rack_clock(const struct mroce_conn *c, const struct path_tx *pt,
                           const struct eng_rack *w, uint64_t rtt)
{
    if ((int32_t)(c->done_bytes - pt->ahead_mark) < 0 || !c->rate_hint_mbps)
        return ENG_NEVER;
    uint16_t newest = pt->psn_len[eng_psn_slot(pt, pt->next_psn - 1)];
    uint64_t own = pt->srtt > rtt ? pt->srtt : rtt;
    uint64_t sent = pt->last_send + own;
    uint64_t clock = w->sent + w->rtt + eng_drain_ns(c, ENG_PSN_BYTES(newest));
    uint64_t hold = pt->newest_ackreq ? 0 : eng_peer_hold(c);
    return (sent > clock ? sent : clock) + rack_reo(c, w) + hold;
}

/* R-LOSS-8: when the plane's oldest path is late (ENG_NEVER: none is).
 * Rule 1: its newest packet was sent before the latest-sent delivered
 * one, w, and has not arrived within the plane's RTT plus R. */
static inline uint64_t rack_at(const struct mroce_conn *c, uint32_t plane)
{
    const struct eng_rack *w = &c->rack[plane];
    if (w->head == RK_NONE || !w->sent || MROCE_FAULT(c->ctx, TLP_OFF))
        return ENG_NEVER;
    const struct path_tx *pt = &c->ptx[w->head];
    uint64_t rtt = rack_rtt(w);
    if (pt->last_send < w->sent)
        return pt->last_send + rtt + rack_reo(c, w);
    return rack_clock(c, pt, w, rtt);
}

/* The earliest R-LOSS-8 time of the connection's planes (the plane loop
 * inline). */
static uint64_t rack_min(const struct mroce_conn *c)
{
    uint32_t n = c->ctx->dev.n_planes;
    if (n == 1)
        return rack_at(c, 0); /* no loop for the usual single plane */
    uint64_t t = ENG_NEVER;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t a = rack_at(c, k);
        if (a < t)
            t = a;
    }
    return t;
}

void eng_rack_update(struct mroce_conn *c)
{
    c->rack_min = rack_min(c);
}

/* R-LOSS-8: a data transmission of `plane` sent at now - rtt was
 * delivered with an RTT sample. It is w if sent after the plane's w; its
 * RTT, less what the peer may have held its ACK (`held`, R-ACK-1), also
 * feeds the plane's recent highest, which rises at once and decays by
 * 1/64 of the difference per lower sample. */
void eng_rack_delivered(struct mroce_conn *c, uint32_t plane, uint64_t now,
                        uint64_t rtt, uint64_t held)
{
    struct eng_rack *w = &c->rack[plane];
    uint64_t sent = now - rtt, q = rtt > held ? rtt - held : 0;
    if (q >= w->hi)
        w->hi = q;
    else
        w->hi -= (w->hi - q) / 64;
    if (sent > w->sent) {
        w->sent = sent;
        w->rtt = rtt;
    }
}

/* Paths found late by R-LOSS-8 get their tail-loss probe now; each one
 * leaves the order, so the next is looked at. */
void eng_rack_fire(struct mroce_conn *c, uint64_t now)
{
    for (uint32_t k = 0; k < c->ctx->dev.n_planes; k++) {
        while (c->state == MROCE_CONN_CONNECTED && rack_at(c, k) <= now)
            eng_path_tlp(c, c->rack[k].head, true);
    }
}
