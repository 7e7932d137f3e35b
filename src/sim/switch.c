/* An output-queued switch; see switch.h for the model. */
#include "sim/switch.h"

#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/event_int.h"
#include "sim/pfc_rx.h"
#include "sim/rng.h"

#define SW_MAX_PORTS 65535

struct sw_queue {
    struct mroce_sim_pkt *head, *tail;
    uint64_t bytes;
};

struct sw_port {
    struct mroce_sim_link *out; /* egress frames */
    struct mroce_sim_link *in;  /* ingress frames; pauses go back on it */
    struct sw_queue q[MROCE_SIM_NPRIO];
    uint64_t free_at;            /* end of this port's last frame on `out` (its
                                    link's busy_until: the port is its only sender) */
    bool busy;                   /* a tx_done event is pending */
    bool routable;               /* member of ECMP groups */
    struct mroce_sim_pfc_rx pfc; /* egress held by downstream PFC */
    uint64_t ing_bytes[MROCE_SIM_NPRIO]; /* buffered, arrived here */
    bool xoff_sent[MROCE_SIM_NPRIO];     /* upstream held by us */
    struct mroce_sim_port_counters c;
};

struct sw_route {
    uint32_t off; /* into gports */
    uint32_t n;   /* 0: no route */
};

struct mroce_sim_switch {
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    struct mroce_sim_switch_cfg cfg; /* defaults resolved */
    struct sw_port *ports;
    struct sw_route *routes; /* by destination host */
    int *gports;             /* ECMP group members, groups back to back */
    uint32_t n_gports, cap_gports;
    uint32_t last_off, last_n; /* last group added, reused if identical */
    uint64_t used;             /* buffer bytes */
    uint64_t held;             /* packets in queues or in proc delay */
    int n_unroutable;
    uint64_t hash_seed;
    struct mroce_sim_rng rng;
};

/* ---- Configuration ---- */

uint32_t mroce_sim_pfc_headroom(uint64_t rate_bps, uint64_t delay_ps,
                                uint32_t mtu_wire)
{
    uint64_t bdp = rate_bps / 8u * delay_ps / MROCE_SIM_PS_PER_S;
    return (uint32_t)(2u * bdp + 2u * mtu_wire + MROCE_SIM_MIN_FRAME_WIRE);
}

static void sw_defaults(struct mroce_sim_switch_cfg *c)
{
    if (c->buffer_bytes == 0)
        c->buffer_bytes = (uint64_t)c->n_ports * MROCE_SIM_BUF_PER_PORT;
    if (c->dt_alpha <= 0.0)
        c->dt_alpha = MROCE_SIM_DT_ALPHA;
    if (c->port_limit == 0)
        c->port_limit = c->buffer_bytes / (uint64_t)c->n_ports;
    if (c->ecn_kmin == 0)
        c->ecn_kmin = MROCE_SIM_ECN_KMIN;
    if (c->ecn_kmax == 0)
        c->ecn_kmax = MROCE_SIM_ECN_KMAX;
    if (c->ecn_pmax <= 0.0)
        c->ecn_pmax = MROCE_SIM_ECN_PMAX;
    if (c->trim_bytes == 0)
        c->trim_bytes = MROCE_SIM_TRIM_BYTES;
    if (c->pfc_mask == 0)
        c->pfc_mask = (1u << MROCE_SIM_NPRIO) - 1;
    if (c->pfc_headroom == 0)
        c->pfc_headroom = mroce_sim_pfc_headroom(
            MROCE_SIM_LINK_BPS, MROCE_SIM_LINK_DELAY_PS, MROCE_SIM_MTU_WIRE);
    if (c->pfc_xoff == 0)
        c->pfc_xoff = MROCE_SIM_PFC_XOFF_HEADROOMS * c->pfc_headroom;
    if (c->pfc_xon == 0) {
        uint32_t gap = MROCE_SIM_PFC_XON_GAP_MTUS * MROCE_SIM_MTU_WIRE;
        c->pfc_xon = c->pfc_xoff > gap ? c->pfc_xoff - gap : 0;
    }
}

static bool sw_cfg_ok(const struct mroce_sim_switch_cfg *c)
{
    return c->n_ports >= 1 && c->n_ports <= SW_MAX_PORTS && c->n_hosts >= 1 &&
           c->ecn_kmin <= c->ecn_kmax && c->pfc_xon <= c->pfc_xoff &&
           c->ecn_pmax <= 1.0;
}

struct mroce_sim_switch *
mroce_sim_switch_create(struct mroce_sim_evlist *ev,
                        struct mroce_sim_pool *pool,
                        const struct mroce_sim_switch_cfg *cfg)
{
    if (!ev || !pool || !cfg || cfg->n_ports < 1 || cfg->n_hosts < 1)
        return NULL;
    struct mroce_sim_switch_cfg c = *cfg;
    sw_defaults(&c);
    if (!sw_cfg_ok(&c))
        return NULL;
    struct mroce_sim_switch *sw = calloc(1, sizeof(*sw));
    if (!sw)
        return NULL;
    sw->ev = ev;
    sw->pool = pool;
    sw->cfg = c;
    sw->ports = calloc((size_t)c.n_ports, sizeof(*sw->ports));
    sw->routes = calloc((size_t)c.n_hosts, sizeof(*sw->routes));
    if (!sw->ports || !sw->routes) {
        mroce_sim_switch_destroy(sw);
        return NULL;
    }
    for (int i = 0; i < c.n_ports; i++)
        sw->ports[i].routable = true;
    sw->hash_seed = mroce_sim_seed(c.seed, 1);
    mroce_sim_rng_init(&sw->rng, mroce_sim_seed(c.seed, 2));
    return sw;
}

/* Queued packets are not dropped: they belong to the pool, which frees
 * them when it is destroyed, and counting them as drops at teardown would
 * only blur the conservation counters. */
void mroce_sim_switch_destroy(struct mroce_sim_switch *sw)
{
    if (!sw)
        return;
    free(sw->ports);
    free(sw->routes);
    free(sw->gports);
    free(sw);
}

/* ---- Routing ---- */

static bool sw_same_group(const struct mroce_sim_switch *sw, const int *ports,
                          int n)
{
    return sw->last_n == (uint32_t)n && memcmp(&sw->gports[sw->last_off], ports,
                                               (size_t)n * sizeof(int)) == 0;
}

static bool sw_add_group(struct mroce_sim_switch *sw, const int *ports, int n)
{
    if (sw->n_gports + (uint32_t)n > sw->cap_gports) {
        uint32_t cap = sw->cap_gports ? sw->cap_gports * 2 : 64;
        while (cap < sw->n_gports + (uint32_t)n)
            cap *= 2;
        int *g = realloc(sw->gports, cap * sizeof(*g));
        if (!g)
            return false;
        sw->gports = g;
        sw->cap_gports = cap;
    }
    memcpy(&sw->gports[sw->n_gports], ports, (size_t)n * sizeof(int));
    sw->last_off = sw->n_gports;
    sw->last_n = (uint32_t)n;
    sw->n_gports += (uint32_t)n;
    return true;
}

bool mroce_sim_switch_set_route(struct mroce_sim_switch *sw, int dst_host,
                                const int *ports, int n)
{
    if (dst_host < 0 || dst_host >= sw->cfg.n_hosts || n < 1 || !ports)
        return false;
    for (int i = 0; i < n; i++)
        if (ports[i] < 0 || ports[i] >= sw->cfg.n_ports)
            return false;
    if (!sw_same_group(sw, ports, n) && !sw_add_group(sw, ports, n))
        return false;
    sw->routes[dst_host].off = sw->last_off;
    sw->routes[dst_host].n = sw->last_n;
    return true;
}

void mroce_sim_switch_set_port_routable(struct mroce_sim_switch *sw, int port,
                                        bool on)
{
    struct sw_port *P = &sw->ports[port];
    if (P->routable != on)
        sw->n_unroutable += on ? -1 : 1;
    P->routable = on;
}

/* The k-th routable member of a group, counting k over routable ones. */
static int sw_pick_routable(const struct mroce_sim_switch *sw, const int *g,
                            uint32_t n, uint64_t h)
{
    uint32_t live = 0;
    for (uint32_t i = 0; i < n; i++)
        live += sw->ports[g[i]].routable;
    if (live == 0) /* nothing better: send into the failure */
        return g[h % n];
    uint64_t k = h % live;
    for (uint32_t i = 0; i < n; i++)
        if (sw->ports[g[i]].routable && k-- == 0)
            return g[i];
    return g[0];
}

/* Inline in the forwarding path; a lone member needs no hash. */
static inline int sw_route(const struct mroce_sim_switch *sw, int dst_host,
                           uint64_t flow_hash)
{
    if ((unsigned)dst_host >= (unsigned)sw->cfg.n_hosts)
        return -1;
    const struct sw_route *r = &sw->routes[dst_host];
    const int *g = &sw->gports[r->off];
    if (r->n <= 1)
        return r->n ? g[0] : -1;
    uint64_t h = mroce_sim_mix64(flow_hash ^ sw->hash_seed);
    if (sw->n_unroutable == 0)
        return g[h % r->n];
    return sw_pick_routable(sw, g, r->n, h);
}

int mroce_sim_switch_route(const struct mroce_sim_switch *sw, int dst_host,
                           uint64_t flow_hash)
{
    return sw_route(sw, dst_host, flow_hash);
}

/* ---- Queues ---- */

static void q_push(struct sw_queue *q, struct mroce_sim_pkt *p)
{
    p->next = NULL;
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    q->bytes += p->wire_bytes;
}

static struct mroce_sim_pkt *q_pop(struct sw_queue *q)
{
    struct mroce_sim_pkt *p = q->head;
    q->head = p->next;
    if (!q->head)
        q->tail = NULL;
    q->bytes -= p->wire_bytes;
    p->next = NULL;
    return p;
}

static bool sw_lossless(const struct mroce_sim_switch *sw, int prio)
{
    return sw->cfg.pfc && (sw->cfg.pfc_mask >> prio & 1u);
}

/* Room in queue (e, prio) for bytes under the lossy admission rule. */
static bool sw_fits(const struct mroce_sim_switch *sw, int e, int prio,
                    uint32_t bytes)
{
    if (sw->used + bytes > sw->cfg.buffer_bytes)
        return false;
    uint64_t qb = sw->ports[e].q[prio].bytes + bytes;
    if (sw->cfg.buffer_static)
        return qb <= sw->cfg.port_limit;
    double free_bytes = (double)(sw->cfg.buffer_bytes - sw->used);
    return (double)qb <= sw->cfg.dt_alpha * free_bytes;
}

static void sw_drop(struct mroce_sim_switch *sw, struct sw_port *at,
                    struct mroce_sim_pkt *p, int reason)
{
    at->c.drops[reason]++;
    mroce_sim_pkt_drop(sw->pool, p, reason);
}

/* Lossy admission, trimming a data packet that does not fit. */
static bool sw_admit_lossy(struct mroce_sim_switch *sw, int e,
                           struct mroce_sim_pkt *p)
{
    if (sw_fits(sw, e, p->prio, p->wire_bytes))
        return true;
    if (sw->cfg.trim && p->prio == MROCE_SIM_PRIO_DATA && !p->trimmed) {
        mroce_sim_pkt_trim(p, sw->cfg.trim_bytes);
        p->prio = MROCE_SIM_PRIO_CTRL;
        if (sw_fits(sw, e, p->prio, p->wire_bytes)) {
            sw->ports[e].c.trimmed++;
            return true;
        }
    }
    sw_drop(sw, &sw->ports[e], p, MROCE_SIM_DROP_QUEUE);
    return false;
}

/* Lossless admission: the ingress port's headroom and the whole buffer. */
static bool sw_admit_lossless(struct mroce_sim_switch *sw, int e,
                              struct mroce_sim_pkt *p)
{
    struct sw_port *in = &sw->ports[p->in_port];
    uint64_t ing = in->ing_bytes[p->prio] + p->wire_bytes;
    if (ing > (uint64_t)sw->cfg.pfc_xoff + sw->cfg.pfc_headroom) {
        sw_drop(sw, in, p, MROCE_SIM_DROP_HEADROOM);
        return false;
    }
    if (sw->used + p->wire_bytes > sw->cfg.buffer_bytes) {
        sw_drop(sw, &sw->ports[e], p, MROCE_SIM_DROP_QUEUE);
        return false;
    }
    return true;
}

/* RED on the egress queue the packet joins, before it joins. */
static void sw_mark_ecn(struct mroce_sim_switch *sw, int e,
                        struct mroce_sim_pkt *p)
{
    uint8_t ecn = p->meta.ecn;
    if (sw->cfg.no_ecn || ecn == MROCE_ECN_NOT_ECT || ecn == MROCE_ECN_CE)
        return;
    uint64_t qb = sw->ports[e].q[p->prio].bytes;
    const struct mroce_sim_switch_cfg *c = &sw->cfg;
    if (qb <= c->ecn_kmin)
        return;
    double prob = 1.0;
    if (qb < c->ecn_kmax)
        prob = c->ecn_pmax * (double)(qb - c->ecn_kmin) /
               (double)(c->ecn_kmax - c->ecn_kmin);
    if (mroce_sim_rng_chance(&sw->rng, prob)) {
        p->meta.ecn = MROCE_ECN_CE;
        sw->ports[e].c.ecn_marks++;
    }
}

/* XOFF: the ingress port/priority crossed its threshold. */
static void sw_check_xoff(struct mroce_sim_switch *sw, int port, int prio,
                          uint64_t now)
{
    struct sw_port *P = &sw->ports[port];
    if (!sw_lossless(sw, prio) || P->xoff_sent[prio] || !P->in ||
        P->ing_bytes[prio] <= sw->cfg.pfc_xoff)
        return;
    P->xoff_sent[prio] = true;
    P->c.pause_tx[prio]++;
    mroce_sim_link_pause(P->in, prio, true, now);
}

/* XON: the ingress port/priority drained to its resume threshold. */
static void sw_check_xon(struct mroce_sim_switch *sw, int port, int prio,
                         uint64_t now)
{
    struct sw_port *P = &sw->ports[port];
    if (!P->xoff_sent[prio] || P->ing_bytes[prio] > sw->cfg.pfc_xon)
        return;
    P->xoff_sent[prio] = false;
    mroce_sim_link_pause(P->in, prio, false, now);
}

/* ---- Egress ---- */

/* Strict priority over the priorities not paused; -1 if nothing to send. */
static int sw_pick_queue(const struct sw_port *P)
{
    for (int q = MROCE_SIM_NPRIO - 1; q >= 0; q--)
        if (P->q[q].head && !P->pfc.paused[q])
            return q;
    return -1;
}

static void sw_start(struct mroce_sim_switch *sw, int e, uint64_t now);

static void sw_tx_done(void *obj, uint64_t arg, uint64_t now)
{
    struct mroce_sim_switch *sw = obj;
    sw->ports[arg].busy = false;
    sw_start(sw, (int)arg, now);
}

/* Starts the next frame on egress e as soon as its link is free: now, or
 * through one tx_done event at the end of the frame on the wire. A port
 * whose queue is empty after a dequeue schedules nothing: the next arrival
 * finds the link's end time itself, which saves an event per packet and
 * hop on uncongested ports. The packet leaves the buffer (and its ingress
 * accounting) as its first bit leaves. */
static void sw_start(struct mroce_sim_switch *sw, int e, uint64_t now)
{
    struct sw_port *P = &sw->ports[e];
    int q = P->busy || !P->out ? -1 : sw_pick_queue(P);
    if (q < 0)
        return;
    if (P->free_at > now) {
        P->busy = true;
        ev_post_inline(sw->ev, P->free_at, sw_tx_done, sw, (uint64_t)e);
        return;
    }
    struct mroce_sim_pkt *p = q_pop(&P->q[q]);
    int in = p->in_port;
    uint32_t bytes = p->wire_bytes;
    sw->used -= bytes;
    sw->held--;
    P->c.tx_pkts++;
    P->c.tx_bytes += bytes;
    P->free_at = mroce_sim_link_send(P->out, p, now); /* p is gone */
    if (sw_pick_queue(P) >= 0) {
        P->busy = true;
        ev_post_inline(sw->ev, P->free_at, sw_tx_done, sw, (uint64_t)e);
    }
    if (sw->cfg.pfc) { /* ingress accounting is PFC's alone */
        sw->ports[in].ing_bytes[q] -= bytes;
        sw_check_xon(sw, in, q, now);
    }
}

static void sw_pause(void *obj, int port, int prio, bool on, uint64_t now)
{
    struct mroce_sim_switch *sw = obj;
    struct sw_port *P = &sw->ports[port];
    if (mroce_sim_pfc_rx_set(&P->pfc, prio, on, now, P->c.pause_rx,
                             P->c.pause_ps))
        sw_start(sw, port, now);
}

/* ---- Ingress ---- */

static void sw_enqueue(struct mroce_sim_switch *sw, int e,
                       struct mroce_sim_pkt *p, uint64_t now)
{
    bool ok = sw_lossless(sw, p->prio) ? sw_admit_lossless(sw, e, p)
                                       : sw_admit_lossy(sw, e, p);
    if (!ok) {
        sw->held--;
        return;
    }
    sw_mark_ecn(sw, e, p);
    struct sw_port *P = &sw->ports[e];
    int q = p->prio, in = p->in_port;
    q_push(&P->q[q], p);
    sw->used += p->wire_bytes;
    uint64_t depth = P->q[0].bytes + P->q[1].bytes;
    if (depth > P->c.max_qbytes)
        P->c.max_qbytes = depth;
    if (sw->cfg.pfc) {
        sw->ports[in].ing_bytes[q] += p->wire_bytes;
        sw_check_xoff(sw, in, q, now);
    }
    if (!P->busy) /* else its tx_done starts the next frame */
        sw_start(sw, e, now);
}

static void sw_forward(struct mroce_sim_switch *sw, struct mroce_sim_pkt *p,
                       uint64_t now)
{
    int e = sw_route(sw, p->dst_host, p->flow_hash);
    if (e < 0) {
        sw->held--;
        sw_drop(sw, &sw->ports[p->in_port], p, MROCE_SIM_DROP_NO_ROUTE);
        return;
    }
    sw_enqueue(sw, e, p, now);
}

static void sw_forward_ev(void *obj, uint64_t arg, uint64_t now)
{
    sw_forward(obj, (struct mroce_sim_pkt *)(uintptr_t)arg, now);
}

static void sw_recv(void *obj, int port, struct mroce_sim_pkt *p, uint64_t now)
{
    struct mroce_sim_switch *sw = obj;
    struct sw_port *P = &sw->ports[port];
    P->c.rx_pkts++;
    P->c.rx_bytes += p->wire_bytes;
    p->in_port = (uint16_t)port;
    p->hops++;
    sw->held++;
    if (sw->cfg.proc_ps)
        ev_post_inline(sw->ev, ev_now_inline(sw->ev) + sw->cfg.proc_ps,
                       sw_forward_ev, sw, (uint64_t)(uintptr_t)p);
    else
        sw_forward(sw, p, now);
}

/* ---- Wiring and queries ---- */

struct mroce_sim_sink mroce_sim_switch_sink(struct mroce_sim_switch *sw,
                                            int port)
{
    struct mroce_sim_sink s = {.recv = sw_recv, .obj = sw, .port = port};
    return s;
}

void mroce_sim_switch_attach(struct mroce_sim_switch *sw, int port,
                             struct mroce_sim_link *out,
                             struct mroce_sim_link *in)
{
    sw->ports[port].out = out;
    sw->ports[port].free_at = out ? mroce_sim_link_busy_until(out) : 0;
    sw->ports[port].in = in;
    if (out) {
        struct mroce_sim_pause_sink ps = {
            .pause = sw_pause, .obj = sw, .port = port};
        mroce_sim_link_set_src(out, &ps);
    }
    if (in) {
        struct mroce_sim_sink sk = mroce_sim_switch_sink(sw, port);
        mroce_sim_link_set_dst(in, &sk);
    }
}

int mroce_sim_switch_n_ports(const struct mroce_sim_switch *sw)
{
    return sw->cfg.n_ports;
}

uint64_t mroce_sim_switch_qbytes(const struct mroce_sim_switch *sw, int port)
{
    return sw->ports[port].q[0].bytes + sw->ports[port].q[1].bytes;
}

uint64_t mroce_sim_switch_buffer_used(const struct mroce_sim_switch *sw)
{
    return sw->used;
}

uint64_t mroce_sim_switch_pkts_held(const struct mroce_sim_switch *sw)
{
    return sw->held;
}

void mroce_sim_switch_get_port_counters(const struct mroce_sim_switch *sw,
                                        int port,
                                        struct mroce_sim_port_counters *out)
{
    const struct sw_port *P = &sw->ports[port];
    *out = P->c;
    uint64_t now = ev_now_inline(sw->ev);
    mroce_sim_pfc_rx_ongoing(&P->pfc, now, out->pause_ps);
}

void mroce_sim_switch_load_port_counters(
    struct mroce_sim_switch *sw, int port,
    const struct mroce_sim_port_counters *c)
{
    struct sw_port *P = &sw->ports[port];
    P->c = *c;
    mroce_sim_pfc_rx_restart(&P->pfc, ev_now_inline(sw->ev));
}

static void sw_add_counters(struct mroce_sim_port_counters *a,
                            const struct mroce_sim_port_counters *b)
{
    a->tx_pkts += b->tx_pkts;
    a->tx_bytes += b->tx_bytes;
    a->rx_pkts += b->rx_pkts;
    a->rx_bytes += b->rx_bytes;
    for (int i = 0; i < MROCE_SIM_DROP_N; i++)
        a->drops[i] += b->drops[i];
    a->ecn_marks += b->ecn_marks;
    a->trimmed += b->trimmed;
    if (b->max_qbytes > a->max_qbytes)
        a->max_qbytes = b->max_qbytes;
    for (int q = 0; q < MROCE_SIM_NPRIO; q++) {
        a->pause_rx[q] += b->pause_rx[q];
        a->pause_ps[q] += b->pause_ps[q];
        a->pause_tx[q] += b->pause_tx[q];
    }
}

void mroce_sim_switch_get_counters(const struct mroce_sim_switch *sw,
                                   struct mroce_sim_port_counters *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < sw->cfg.n_ports; i++) {
        struct mroce_sim_port_counters c;
        mroce_sim_switch_get_port_counters(sw, i, &c);
        sw_add_counters(out, &c);
    }
}
