/* Experiments: what the receivers get and how the fabric looks over
 * time; see exp.h and docs/sim.md "Health metrics" and "Time series".
 *
 * Every packet a host hands to its engine passes exp_meter_rx. A data
 * packet (one that carries payload: MetaRoCE opcodes with a DXH, RoCEv2
 * SEND and WRITE) is counted delivered, CE-marked or not, reordered or
 * not: O(1), a binary search of the sender among the endpoint's receive
 * records. What the engine places arrives through the receiving region's
 * hook (sim/vmem.h) at exp_meter_placed: each payload byte counts once,
 * and RoCEv2's go-back-N discards are not placed.
 *
 * The sampler is one event every sample interval that turns the placed
 * bytes since the last sample into Gbit/s and reads the queues (all
 * switch egress ports: O(ports) per sample). */
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/exp_int.h"
#include "sim/switch.h"
#include "sim/topo.h"
#include "wire/roce.h"
#include "wire/wire.h"

/* ---- Receive records ---- */

int exp_rx_init(struct exp_rx *r, struct mroce_conn *conn)
{
    struct mroce_conn_params p;
    mroce_conn_get_params(conn, &p);
    bool roce = p.transport == MROCE_TRANSPORT_ROCEV2;
    r->conn = conn;
    r->n_seq = roce ? p.n_qps : 1;
    r->qpn = calloc(r->n_seq, sizeof(*r->qpn));
    r->next = calloc(r->n_seq, sizeof(*r->next));
    r->seen = calloc(r->n_seq, 1);
    if (!r->qpn || !r->next || !r->seen)
        return MROCE_ENOMEM;
    if (roce)
        memcpy(r->qpn, p.qpn, r->n_seq * sizeof(*r->qpn));
    return 0;
}

void exp_rx_free(struct exp_rx *r)
{
    free(r->qpn);
    free(r->next);
    free(r->seen);
}

static struct exp_rx *exp_rx_search(struct exp_ep *e,
                                    const struct mroce_pkt_meta *meta)
{
    int src = mroce_sim_topo_resolve(e->x->t, &meta->src);
    int lo = 0, hi = e->n_rx - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (e->rx[mid].src == src)
            return &e->rx[mid];
        if (e->rx[mid].src < src)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* The sender's record, NULL if the packet is from no sender of e. The
 * topology's addresses are IPv4 (topo.h), so the last match is kept by
 * its address. */
static struct exp_rx *exp_rx_find(struct exp_ep *e,
                                  const struct mroce_pkt_meta *meta)
{
    uint32_t ip4;
    memcpy(&ip4, meta->src.ip, sizeof(ip4));
    bool v4 = meta->src.family == MROCE_AF_INET;
    if (v4 && e->last_rx && ip4 == e->last_ip4)
        return e->last_rx;
    struct exp_rx *r = exp_rx_search(e, meta);
    if (r && v4) {
        e->last_rx = r;
        e->last_ip4 = ip4;
    }
    return r;
}

/* ---- Data packets ---- */

/* What the meter reads of a data packet. */
struct exp_pkt {
    uint32_t payload; /* bytes */
    uint32_t seq;     /* DSN (MetaRoCE) or PSN (RoCEv2) */
    uint32_t qpn;     /* RoCEv2: the destination QP */
};

static uint32_t exp_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* MetaRoCE: opcodes with a DXH and a payload (R-HDR-4); the payload is
 * what follows the headers, before the CRC. */
static bool exp_pkt_meta(const uint8_t *buf, size_t len, struct exp_pkt *k)
{
    if (len < MROCE_MTH_LEN + MROCE_DXH_LEN)
        return false;
    const struct mroce_op_info *oi = mroce_wire_op_info(buf[1]);
    if (!oi || !(oi->headers & MROCE_H_DXH) || !(oi->headers & MROCE_H_PAYLOAD))
        return false;
    size_t hdr = (size_t)oi->hdr_len + MROCE_ICRC_LEN;
    k->payload = len > hdr ? (uint32_t)(len - hdr) : 0;
    k->seq = exp_be32(buf + MROCE_MTH_LEN);
    return true;
}

static bool exp_pkt_roce(const uint8_t *buf, size_t len, struct exp_pkt *k)
{
    struct roce_hdr h;
    if (roce_decode(NULL, buf, len, &h) != ROCE_WIRE_OK)
        return false;
    const struct roce_op_info *oi = roce_op_info(h.opcode);
    if (!oi || (oi->kind != ROCE_K_WRITE && oi->kind != ROCE_K_SEND))
        return false;
    k->payload = h.payload_len;
    k->seq = h.psn;
    k->qpn = h.dqpn;
    return true;
}

/* Counts a data packet arriving below the next expected sequence number
 * of its space (RFC 4737's reordered packet: overtaken by a later one,
 * or sent again). */
static void exp_seq(struct exp_meter *m, struct exp_rx *r, int q, uint32_t seq,
                    bool roce)
{
    int32_t d =
        roce ? roce_psn_diff(seq, r->next[q]) : (int32_t)(seq - r->next[q]);
    if (r->seen[q] && d < 0) {
        m->ooo++;
        return;
    }
    r->seen[q] = 1;
    r->next[q] = roce ? roce_psn_add(seq, 1) : seq + 1;
}

static void exp_reorder(struct exp_meter *m, struct exp_rx *r,
                        const struct exp_pkt *k, bool roce)
{
    if (!roce) {
        exp_seq(m, r, 0, k->seq, false);
        return;
    }
    for (int q = 0; q < r->n_seq; q++)
        if (r->qpn[q] == k->qpn) {
            exp_seq(m, r, q, k->seq, true);
            return;
        }
}

int exp_meter_rx(struct exp_ep *e, uint64_t now_ns,
                 const struct mroce_pkt_meta *meta, const uint8_t *buf,
                 size_t len)
{
    struct exp *x = e->x;
    bool roce = x->c.transport == MROCE_TRANSPORT_ROCEV2;
    struct exp_pkt k = {0};
    struct exp_meter *m = &x->m;
    m->now_ps = now_ns * MROCE_SIM_PS_PER_NS; /* for exp_meter_placed */
    if (e->n_rx &&
        (roce ? exp_pkt_roce(buf, len, &k) : exp_pkt_meta(buf, len, &k))) {
        struct exp_rx *r = exp_rx_find(e, meta);
        if (r) {
            m->rx_data++;
            m->rx_wire += mroce_sim_wire_bytes((uint32_t)len, meta->src.family);
            m->rx_ce += meta->ecn == MROCE_ECN_CE;
            exp_reorder(m, r, &k, roce);
        }
    }
    return mroce_ctx_rx(e->ctx, now_ns, meta, buf, len);
}

/* The engine placed payload (each byte once: retransmissions of placed
 * data and go-back-N discards never get here). owner is the flow's
 * receive record (NULL for collectives' buffers). */
void exp_meter_placed(void *ud, struct mroce_sim_vbuf *b, uint64_t off,
                      uint64_t len)
{
    (void)off;
    struct exp *x = ud;
    struct exp_meter *m = &x->m;
    struct exp_rx *r = mroce_sim_vbuf_owner(b);
    m->placed += len;
    m->last_rx[mroce_sim_vbuf_host(b)] = m->now_ps;
    if (!r)
        return;
    exp_conv_placed(x, r, (uint32_t)len, m->now_ps);
    if (r->victim)
        m->victim_placed += len;
}

/* ---- The time series ---- */

static void exp_sw_max(const struct mroce_sim_switch *sw, uint64_t *max)
{
    int n = mroce_sim_switch_n_ports(sw);
    for (int p = 0; p < n; p++) {
        uint64_t q = mroce_sim_switch_qbytes(sw, p);
        *max = q > *max ? q : *max;
    }
}

/* The deepest egress queue of the fabric, and host 0's leaf downlink
 * (summed over planes: all that waits for host 0 at its leaves). */
static void exp_queues(struct exp *x, struct mroce_sim_exp_sample *s)
{
    for (int i = 0; i < mroce_sim_topo_n_switches(x->t); i++)
        exp_sw_max(mroce_sim_topo_switch(x->t, i), &s->qbytes);
    for (int p = 0; p < x->c.planes; p++)
        s->q_dst_bytes += mroce_sim_switch_qbytes(
            mroce_sim_topo_leaf(x->t, p, 0), 0); /* port 0: host 0 */
}

static double exp_gbps(uint64_t bytes, uint64_t ps)
{
    return ps ? (double)bytes * 8e3 / (double)ps : 0.0;
}

/* Pairs of samples become one over twice the interval (the later one's
 * queue readings: they are instants; the bytes of both). */
static void exp_meter_halve(struct exp_meter *m)
{
    for (int k = 0; 2 * k + 1 < m->n; k++) {
        m->s[k] = m->s[2 * k + 1];
        m->sb[k] = m->sb[2 * k] + m->sb[2 * k + 1];
        m->svb[k] = m->svb[2 * k] + m->svb[2 * k + 1];
    }
    m->n /= 2;
    m->interval *= 2;
}

static bool exp_meter_room(struct exp_meter *m)
{
    if (m->n == MROCE_SIM_EXP_MAX_SAMPLES)
        exp_meter_halve(m);
    if (m->n < m->cap)
        return true;
    int cap = m->cap ? 2 * m->cap : 1024;
    cap = cap < MROCE_SIM_EXP_MAX_SAMPLES ? cap : MROCE_SIM_EXP_MAX_SAMPLES;
    struct mroce_sim_exp_sample *s = realloc(m->s, (size_t)cap * sizeof(*s));
    if (s)
        m->s = s;
    uint64_t *b = s ? realloc(m->sb, (size_t)cap * sizeof(*b)) : NULL;
    if (b)
        m->sb = b;
    uint64_t *vb = b ? realloc(m->svb, (size_t)cap * sizeof(*vb)) : NULL;
    if (!vb)
        return false;
    m->svb = vb;
    m->cap = cap;
    return true;
}

/* The sample of (last sample, t]: every byte placed since the last. */
static void exp_meter_push(struct exp *x, uint64_t t)
{
    struct exp_meter *m = &x->m;
    if (!exp_meter_room(m))
        return; /* out of memory: the series stops, the run goes on */
    struct mroce_sim_exp_sample *s = &m->s[m->n];
    memset(s, 0, sizeof(*s));
    s->t_ps = t;
    m->sb[m->n] = m->placed - m->last_placed;
    m->svb[m->n++] = m->victim_placed - m->last_victim;
    exp_queues(x, s);
    exp_conv_tick(x, t);
    m->last_t = t;
    m->last_placed = m->placed;
    m->last_victim = m->victim_placed;
}

static void exp_meter_tick(void *obj, uint64_t arg, uint64_t now);

static void exp_meter_arm(struct exp *x)
{
    struct exp_meter *m = &x->m;
    m->armed = mroce_sim_ev_post(x->ev, m->last_t + m->interval, exp_meter_tick,
                                 x, 0) != 0;
}

/* After a halving the interval doubled: the tick that found the series
 * full waits for the end of the longer interval. */
static void exp_meter_tick(void *obj, uint64_t arg, uint64_t now)
{
    (void)arg;
    struct exp *x = obj;
    struct exp_meter *m = &x->m;
    m->ticks++;
    m->armed = false;
    if (m->n == MROCE_SIM_EXP_MAX_SAMPLES)
        exp_meter_halve(m);
    if (now >= m->last_t + m->interval)
        exp_meter_push(x, now);
    exp_meter_arm(x);
}

int exp_meter_start(struct exp *x)
{
    struct exp_meter *m = &x->m;
    m->interval = x->c.sample_ps;
    m->last_t = m->t0 = mroce_sim_ev_now(x->ev);
    m->last_rx = calloc((size_t)x->c.hosts, sizeof(*m->last_rx));
    if (m->last_rx)
        exp_meter_arm(x);
    return m->armed ? 0 : exp_fail(x, MROCE_ENOMEM, "out of memory");
}

size_t exp_meter_busy(const struct exp *x)
{
    return mroce_sim_ev_pending(x->ev) - (x->m.armed ? 1 : 0);
}

/* Bytes placed after the last sample (on any rank) belong to the
 * interval that was running when the run stopped; its queues are read at
 * the stop. */
int exp_meter_finish(struct exp *x)
{
    struct exp_meter *m = &x->m;
    struct mroce_sim_exp_result *r = x->res;
    uint64_t late =
        m->placed - m->last_placed + m->victim_placed - m->last_victim;
    int err = exp_par_reduce(x, &late, 1, 0);
    if (!err && late) {
        if (m->n == MROCE_SIM_EXP_MAX_SAMPLES)
            exp_meter_halve(m);
        exp_meter_push(x, m->last_t + m->interval);
    }
    r->samples = m->s;
    r->n_samples = m->n;
    m->s = NULL;
    return err;
}

void exp_meter_result(struct exp *x)
{
    struct exp_meter *m = &x->m;
    struct mroce_sim_exp_result *r = x->res;
    for (int i = 0; i < r->n_samples; i++) {
        struct mroce_sim_exp_sample *s = &r->samples[i];
        uint64_t span = s->t_ps - (i ? r->samples[i - 1].t_ps : m->t0);
        s->gbps = exp_gbps(m->sb[i], span);
        s->victim_gbps = exp_gbps(m->svb[i], span);
    }
    r->rx_data_pkts = m->rx_data;
    r->eta_measured = m->rx_wire ? (double)m->placed / (double)m->rx_wire : 0;
    r->rx_ce_pkts = m->rx_ce;
    r->placed_bytes = m->placed;
}
