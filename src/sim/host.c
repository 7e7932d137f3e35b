/* A simulated host; see host.h for the model. */
#include "sim/host.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"

struct mroce_sim_host {
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    struct mroce_sim_nic *nic;
    struct mroce_sim_host_cfg cfg;
    const struct mroce_ep_ops *ops;
    void *ep;
    struct mroce_sim_pkt *spare; /* a taken pool buffer the engine writes
                                    into; kept when it wrote nothing */
    size_t cap;
    mroce_sim_ev_handle timer; /* the one pending timer event, or 0 */
    uint64_t timer_at;
    bool pulling; /* a pull is on the stack: the NIC's room callback
                     from inside it must not start another */
    struct mroce_sim_host_counters c;
};

/* ---- The mroce_ctx adapter ---- */

/* ---- Driving ---- */

static int host_classify(const struct mroce_sim_host *h,
                         const struct mroce_pkt_meta *meta, const uint8_t *buf,
                         size_t len)
{
    if (h->cfg.classify)
        return h->cfg.classify(h->cfg.classify_ud, meta, buf, len);
    return len <= MROCE_SIM_CTRL_MAX_PAYLOAD ? MROCE_SIM_PRIO_CTRL
                                             : MROCE_SIM_PRIO_DATA;
}

/* Turns the engine's output, written into the spare buffer, into a
 * packet on the NIC. */
static void host_inject(struct mroce_sim_host *h,
                        const struct mroce_pkt_meta *meta, size_t len,
                        uint64_t now)
{
    int prio = host_classify(h, meta, h->spare->data, len);
    struct mroce_sim_pkt *p =
        mroce_sim_pkt_commit(h->pool, h->spare, meta, (uint32_t)len, now);
    h->spare = NULL;
    if (!p) {
        h->c.tx_errors++;
        return;
    }
    p->prio =
        prio == MROCE_SIM_PRIO_CTRL ? MROCE_SIM_PRIO_CTRL : MROCE_SIM_PRIO_DATA;
    p->src_host = h->cfg.id;
    p->dst_host = h->cfg.resolve(h->cfg.resolve_ud, &meta->dst);
    h->c.tx_pkts++;
    h->c.tx_bytes += len;
    if (p->dst_host < 0) {
        h->c.tx_no_route++;
        mroce_sim_pkt_drop(h->pool, p, MROCE_SIM_DROP_NO_ROUTE);
        return;
    }
    mroce_sim_nic_send(h->nic, h->pool, p, now);
}

/* Whether the NIC can take a frame now; tells a plane-choosing endpoint
 * which ports can (R-PATH-14). */
static bool host_can_send(struct mroce_sim_host *h)
{
    if (!h->ops->set_tx_planes)
        return mroce_sim_nic_has_room(h->nic);
    uint64_t m = mroce_sim_nic_room_mask(h->nic);
    if (m)
        h->ops->set_tx_planes(h->ep, m);
    return m != 0;
}

static void host_pull(struct mroce_sim_host *h, uint64_t now)
{
    if (!h->ops || h->pulling)
        return;
    h->pulling = true;
    uint64_t now_ns = now / MROCE_SIM_PS_PER_NS;
    while (host_can_send(h)) {
        struct mroce_pkt_meta meta;
        memset(&meta, 0, sizeof(meta));
        h->c.pulls++;
        if (h->spare) /* kept: the codec hears it is written again */
            mroce_sim_pkt_open(h->pool, h->spare);
        else if (!(h->spare = mroce_sim_pkt_take(h->pool))) {
            h->c.tx_errors++;
            break;
        }
        int len = h->ops->tx(h->ep, now_ns, h->spare->data, h->cap, &meta);
        if (len <= 0) {
            h->c.tx_errors += len < 0;
            break;
        }
        if (!h->ops->set_tx_planes) /* the endpoint does not choose */
            meta.plane = (uint8_t)mroce_sim_nic_port_of(h->nic, meta.src_port);
        host_inject(h, &meta, (size_t)len, now);
    }
    h->pulling = false;
}

static void host_timer(void *obj, uint64_t arg, uint64_t now);

/* Keeps one timer event no later than the endpoint's expiry (and no
 * earlier than not_before). A deadline that moved later leaves the event
 * in place: it fires early, finds nothing due and re-arms. Only a deadline
 * that moved earlier costs a cancel, so the event list is not littered
 * with dead timers by engines that push their RTO back on every ACK. */
static void host_rearm(struct mroce_sim_host *h, uint64_t not_before)
{
    uint64_t e = h->ops ? h->ops->next_expiry(h->ep) : UINT64_MAX;
    if (e >= MROCE_SIM_NEVER / MROCE_SIM_PS_PER_NS)
        return;
    uint64_t t = e * MROCE_SIM_PS_PER_NS;
    if (t < not_before)
        t = not_before;
    if (h->timer && h->timer_at <= t)
        return;
    if (h->timer)
        mroce_sim_ev_cancel(h->ev, h->timer);
    h->timer_at = t;
    h->timer = mroce_sim_ev_at(h->ev, t, host_timer, h, 0);
}

static void host_timer(void *obj, uint64_t arg, uint64_t now)
{
    (void)arg;
    struct mroce_sim_host *h = obj;
    h->timer = 0;
    h->timer_at = MROCE_SIM_NEVER;
    if (!h->ops)
        return;
    uint64_t now_ns = now / MROCE_SIM_PS_PER_NS;
    if (h->ops->next_expiry(h->ep) > now_ns) { /* moved later meanwhile */
        h->c.early_timers++;
        host_rearm(h, now);
        return;
    }
    h->c.expiries++;
    h->ops->on_expiry(h->ep, now_ns);
    host_pull(h, now);
    host_rearm(h, (now_ns + 1) * MROCE_SIM_PS_PER_NS);
}

static void host_interact(struct mroce_sim_host *h, uint64_t now)
{
    host_pull(h, now);
    host_rearm(h, now);
}

static void host_kick_ev(void *obj, uint64_t arg, uint64_t now)
{
    (void)arg;
    host_interact(obj, now);
}

static void host_room(void *ud, uint64_t now)
{
    host_interact(ud, now);
}

static void host_rx(void *ud, int port, struct mroce_sim_pkt *p, uint64_t now)
{
    (void)port;
    struct mroce_sim_host *h = ud;
    if (!h->ops) {
        h->c.rx_no_ep++;
        mroce_sim_pkt_drop(h->pool, p, MROCE_SIM_DROP_HOST);
        return;
    }
    h->c.rx_pkts++;
    h->c.rx_bytes += p->len;
    const uint8_t *buf = mroce_sim_pkt_bytes(h->pool, p);
    int rc =
        h->ops->rx(h->ep, now / MROCE_SIM_PS_PER_NS, &p->meta, buf, p->len);
    mroce_sim_pkt_bytes_done(h->pool, p);
    h->c.rx_refused += rc < 0;
    mroce_sim_pkt_deliver(h->pool, p);
    host_interact(h, now);
}

/* ---- Creation ---- */

struct mroce_sim_host *mroce_sim_host_create(struct mroce_sim_evlist *ev,
                                             struct mroce_sim_pool *pool,
                                             const struct mroce_sim_host_cfg *c)
{
    if (!ev || !pool || !c || !c->resolve)
        return NULL;
    struct mroce_sim_host *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->ev = ev;
    h->pool = pool;
    h->cfg = *c;
    h->timer_at = MROCE_SIM_NEVER;
    struct mroce_sim_nic_owner o = {.rx = host_rx, .room = host_room, .ud = h};
    h->nic = mroce_sim_nic_create(ev, &c->nic, &o);
    if (!h->nic) {
        free(h);
        return NULL;
    }
    return h;
}

void mroce_sim_host_destroy(struct mroce_sim_host *h)
{
    if (!h)
        return;
    if (h->timer)
        mroce_sim_ev_cancel(h->ev, h->timer);
    mroce_sim_nic_destroy(h->nic);
    if (h->spare)
        mroce_sim_pkt_untake(h->pool, h->spare);
    free(h);
}

struct mroce_sim_nic *mroce_sim_host_nic(struct mroce_sim_host *h)
{
    return h->nic;
}

int mroce_sim_host_id(const struct mroce_sim_host *h)
{
    return h->cfg.id;
}

static bool host_ops_ok(const struct mroce_ep_ops *o)
{
    return o->max_pkt && o->tx && o->rx && o->next_expiry && o->on_expiry;
}

int mroce_sim_host_attach(struct mroce_sim_host *h,
                          const struct mroce_ep_ops *ops, void *ep)
{
    if (ops && (!host_ops_ok(ops) || !ep))
        return MROCE_EINVAL;
    size_t cap = ops ? ops->max_pkt(ep) : 0;
    if (cap > mroce_sim_pool_max_payload(h->pool))
        return MROCE_EINVAL;
    h->cap = cap;
    h->ops = ops;
    h->ep = ops ? ep : NULL;
    if (ops)
        mroce_sim_host_kick(h);
    return 0;
}

void mroce_sim_host_kick(struct mroce_sim_host *h)
{
    uint32_t ctx = mroce_sim_ev_set_lp(h->ev, h->cfg.lp);
    mroce_sim_ev_post(h->ev, mroce_sim_ev_now(h->ev), host_kick_ev, h, 0);
    mroce_sim_ev_set_lp(h->ev, ctx);
}

void mroce_sim_host_get_counters(const struct mroce_sim_host *h,
                                 struct mroce_sim_host_counters *out)
{
    *out = h->c;
}
