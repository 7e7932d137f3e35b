/* A host's NIC; see nic.h for the model. */
#include "sim/nic.h"

#include <stdlib.h>

#include "sim/defaults.h"
#include "sim/event_int.h"
#include "sim/pfc_rx.h"

#define NIC_MAX_PORTS 256

struct nic_queue {
    struct mroce_sim_pkt *head, *tail;
};

struct nic_port {
    struct mroce_sim_link *out;
    uint64_t free_at; /* end of its last frame: the link's busy_until */
    struct nic_queue q[MROCE_SIM_NPRIO];
    bool busy;                   /* a tx_done event is pending */
    uint32_t waiting;            /* frames queued, not yet serializing */
    struct mroce_sim_pfc_rx pfc; /* held by the downstream switch's PFC */
    struct mroce_sim_nic_port_counters c;
};

struct mroce_sim_nic {
    struct mroce_sim_evlist *ev;
    struct mroce_sim_nic_owner owner;
    struct nic_port *ports;
    int n_ports;
    uint32_t txq;    /* frames waiting per port (room_mask) */
    uint32_t limit;  /* frames waiting, all ports (has_room) */
    uint32_t queued; /* frames waiting now */
    uint64_t room;   /* room_mask, kept as ports fill and drain */
};

struct mroce_sim_nic *mroce_sim_nic_create(struct mroce_sim_evlist *ev,
                                           const struct mroce_sim_nic_cfg *cfg,
                                           const struct mroce_sim_nic_owner *o)
{
    int n = cfg && cfg->n_ports ? cfg->n_ports : 1;
    uint32_t txq =
        cfg && cfg->txq_pkts ? cfg->txq_pkts : MROCE_SIM_NIC_TXQ_PKTS;
    if (!ev || !o || !o->rx || !o->room || n < 1 || n > NIC_MAX_PORTS)
        return NULL;
    struct mroce_sim_nic *nic = calloc(1, sizeof(*nic));
    if (!nic)
        return NULL;
    nic->ports = calloc((size_t)n, sizeof(*nic->ports));
    if (!nic->ports) {
        free(nic);
        return NULL;
    }
    nic->ev = ev;
    nic->owner = *o;
    nic->n_ports = n;
    nic->txq = txq;
    nic->limit = txq * (uint32_t)n;
    return nic;
}

void mroce_sim_nic_destroy(struct mroce_sim_nic *nic)
{
    if (!nic)
        return;
    free(nic->ports);
    free(nic);
}

int mroce_sim_nic_n_ports(const struct mroce_sim_nic *nic)
{
    return nic->n_ports;
}

int mroce_sim_nic_port_of(const struct mroce_sim_nic *nic, uint16_t src_port)
{
    return src_port % nic->n_ports;
}

bool mroce_sim_nic_has_room(const struct mroce_sim_nic *nic)
{
    return nic->queued < nic->limit;
}

uint64_t mroce_sim_nic_room_mask(const struct mroce_sim_nic *nic)
{
    return nic->room;
}

/* Port i's bit of room_mask after its queue or link changed. */
static void nic_room_update(struct mroce_sim_nic *nic, int i)
{
    if (i >= 64)
        return;
    const struct nic_port *P = &nic->ports[i];
    uint64_t bit = UINT64_C(1) << i;
    if (P->waiting < nic->txq && P->out)
        nic->room |= bit;
    else
        nic->room &= ~bit;
}

uint32_t mroce_sim_nic_queued(const struct mroce_sim_nic *nic)
{
    return nic->queued;
}

/* ---- Transmit ---- */

static void nic_start(struct mroce_sim_nic *nic, int port, uint64_t now);

static void nic_tx_done(void *obj, uint64_t arg, uint64_t now)
{
    struct mroce_sim_nic *nic = obj;
    nic->ports[arg].busy = false;
    nic_start(nic, (int)arg, now);
}

static int nic_pick_queue(const struct nic_port *P)
{
    for (int q = MROCE_SIM_NPRIO - 1; q >= 0; q--)
        if (P->q[q].head && !P->pfc.paused[q])
            return q;
    return -1;
}

/* Starts the next frame as soon as the port's link is free (now, or by
 * one tx_done event when the frame on the wire ends; none when nothing
 * waits, as in the switch), then offers the freed slot to the owner,
 * which may call mroce_sim_nic_send from inside. */
static void nic_start(struct mroce_sim_nic *nic, int port, uint64_t now)
{
    struct nic_port *P = &nic->ports[port];
    int q = P->busy ? -1 : nic_pick_queue(P);
    if (q < 0)
        return;
    if (P->free_at > now) {
        P->busy = true;
        ev_post_inline(nic->ev, P->free_at, nic_tx_done, nic, (uint64_t)port);
        return;
    }
    struct mroce_sim_pkt *p = P->q[q].head;
    P->q[q].head = p->next;
    if (!P->q[q].head)
        P->q[q].tail = NULL;
    p->next = NULL;
    nic->queued--;
    P->waiting--;
    nic_room_update(nic, port);
    P->c.tx_pkts++;
    P->c.tx_bytes += p->wire_bytes;
    uint64_t end = mroce_sim_link_send(P->out, p, now);
    P->free_at = end;
    /* A packet sent from inside the callback finds the link busy and
     * schedules the tx_done itself. */
    nic->owner.room(nic->owner.ud, now);
    if (!P->busy && nic_pick_queue(P) >= 0) {
        P->busy = true;
        ev_post_inline(nic->ev, end, nic_tx_done, nic, (uint64_t)port);
    }
}

void mroce_sim_nic_send(struct mroce_sim_nic *nic, struct mroce_sim_pool *pool,
                        struct mroce_sim_pkt *p, uint64_t now_ps)
{
    struct nic_port *P = &nic->ports[p->meta.plane % nic->n_ports];
    if (!P->out) {
        mroce_sim_pkt_drop(pool, p, MROCE_SIM_DROP_NO_ROUTE);
        return;
    }
    struct nic_queue *q = &P->q[p->prio];
    p->next = NULL;
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    nic->queued++;
    P->waiting++;
    nic_room_update(nic, (int)(P - nic->ports));
    nic_start(nic, (int)(P - nic->ports), now_ps);
}

/* ---- PFC and receive ---- */

static void nic_pause(void *obj, int port, int prio, bool on, uint64_t now)
{
    struct mroce_sim_nic *nic = obj;
    struct nic_port *P = &nic->ports[port];
    if (mroce_sim_pfc_rx_set(&P->pfc, prio, on, now, P->c.pause_rx,
                             P->c.pause_ps))
        nic_start(nic, port, now);
}

static void nic_recv(void *obj, int port, struct mroce_sim_pkt *p, uint64_t now)
{
    struct mroce_sim_nic *nic = obj;
    nic->ports[port].c.rx_pkts++;
    nic->ports[port].c.rx_bytes += p->wire_bytes;
    nic->owner.rx(nic->owner.ud, port, p, now);
}

void mroce_sim_nic_attach(struct mroce_sim_nic *nic, int port,
                          struct mroce_sim_link *out, struct mroce_sim_link *in)
{
    nic->ports[port].out = out;
    nic->ports[port].free_at = out ? mroce_sim_link_busy_until(out) : 0;
    nic_room_update(nic, port);
    if (out) {
        struct mroce_sim_pause_sink ps = {
            .pause = nic_pause, .obj = nic, .port = port};
        mroce_sim_link_set_src(out, &ps);
    }
    if (in) {
        struct mroce_sim_sink sk = {.recv = nic_recv, .obj = nic, .port = port};
        mroce_sim_link_set_dst(in, &sk);
    }
}

void mroce_sim_nic_load_port_counters(
    struct mroce_sim_nic *nic, int port,
    const struct mroce_sim_nic_port_counters *c)
{
    struct nic_port *P = &nic->ports[port];
    P->c = *c;
    mroce_sim_pfc_rx_restart(&P->pfc, ev_now_inline(nic->ev));
}

void mroce_sim_nic_get_port_counters(const struct mroce_sim_nic *nic, int port,
                                     struct mroce_sim_nic_port_counters *out)
{
    const struct nic_port *P = &nic->ports[port];
    *out = P->c;
    uint64_t now = ev_now_inline(nic->ev);
    mroce_sim_pfc_rx_ongoing(&P->pfc, now, out->pause_ps);
}
