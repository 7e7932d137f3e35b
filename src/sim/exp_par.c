/* Experiments over partitions (sim/part.h, sim/prun.h): what the
 * experiment's driver needs from all ranks, and what the ranks exchange.
 *
 * A run on R ranks is R copies of the same driver in lockstep: every rank
 * builds the whole topology, computes the same workload, and opens the
 * engines, buffers and connection ends of its own hosts only. Connection
 * parameters and buffer addresses cross to the rank of the other end, as
 * an RDMA application exchanges them out of band. While running, the
 * driver's decisions rest on values reduced over all ranks at window and
 * slice boundaries (struct exp_glob). At the end every rank's counters
 * are summed into rank 0's objects and records, where the unchanged
 * result code computes the results: a counter is only ever touched by the
 * rank that owns its object (a cut link's two halves each count their
 * side), so sums are the one-process values. One rank is the case R = 1:
 * the reductions return what they were given.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <mroce/mroce.h>

#include "coll/comm.h"
#include "sim/exp_int.h"
#include "sim/link.h"
#include "sim/nic.h"
#include "sim/switch.h"

/* ---- Partition ---- */

bool exp_local(const struct exp *x, int h)
{
    return !x->part ||
           x->part->owner[mroce_sim_topo_host_lp(x->t, h)] == x->rank;
}

static int exp_owner(const struct exp *x, int h)
{
    return x->part->owner[mroce_sim_topo_host_lp(x->t, h)];
}

int exp_par_start(struct exp *x)
{
    char why[sizeof(x->res->error)];
    int err = mroce_sim_part_create(x->t, x->ranks, &x->part, why, sizeof(why));
    if (err)
        return exp_fail(x, err, "%s", err == MROCE_EINVAL ? why : "no memory");
    err = mroce_sim_prun_create(x->t, x->part, x->part_comm, EXP_QUANTUM_PS,
                                &x->run);
    if (err)
        return exp_fail(x, err, "parallel runner: %s", mroce_strerror(err));
    x->coll_fail_ps = MROCE_SIM_NEVER;
    return 0;
}

void exp_par_stop(struct exp *x)
{
    mroce_sim_prun_destroy(x->run);
    mroce_sim_part_destroy(x->part);
    x->run = NULL;
    x->part = NULL;
}

int exp_par_reduce(struct exp *x, uint64_t *v, size_t n_sum, size_t n_max)
{
    return mroce_sim_comm_allreduce(x->part_comm, v, n_sum, n_max);
}

/* ---- Running ---- */

struct exp_win {
    struct exp *x;
    bool flows, coll;
};

/* Sums: flows settled, ranks whose collective ended; maxima: the last
 * settle, the last end, NEVER - the first failure. */
static void exp_win_fill(void *ud, uint64_t *v)
{
    const struct exp_win *w = ud;
    const struct exp *x = w->x;
    v[0] = (uint64_t)x->n_settled;
    v[1] = !x->coll_active;
    v[2] = x->settle_ps;
    v[3] = x->coll_active ? 0 : x->coll_done_ps;
    v[4] = MROCE_SIM_NEVER - x->coll_fail_ps;
}

static bool exp_win_done(void *ud, const uint64_t *v)
{
    const struct exp_win *w = ud;
    struct exp *x = w->x;
    if (w->flows && v[0] == (uint64_t)x->n_flows) {
        x->g.settled = v[0];
        x->g.settle_ps = v[2];
        return true;
    }
    if (w->coll && (v[1] == (uint64_t)x->ranks || v[4])) {
        x->g.coll_done = v[1];
        x->g.coll_done_ps = v[3];
        x->g.coll_fail_ps = MROCE_SIM_NEVER - v[4];
        return true;
    }
    return false;
}

int exp_par_run(struct exp *x, uint64_t until_ps, bool flows, bool coll)
{
    struct exp_win w = {x, flows, coll};
    struct mroce_sim_prun_sync s = {.n_sum = 2,
                                    .n_max = 3,
                                    .fill = exp_win_fill,
                                    .done = exp_win_done,
                                    .ud = &w};
    int rc = mroce_sim_prun_run(x->run, until_ps, flows || coll ? &s : NULL);
    if (rc == 0)
        x->now = until_ps;
    return rc;
}

/* The events this rank ran that a one-process run counts: its own LPs',
 * and LP 0's (replicated) on rank 0 only, without the sampler's. */
static uint64_t exp_own_events(const struct exp *x)
{
    uint64_t all = mroce_sim_ev_count(x->ev);
    return x->rank == 0 ? all - x->m.ticks
                        : all - mroce_sim_ev_count_lp0(x->ev);
}

int exp_par_glob(struct exp *x)
{
    struct mroce_sim_pool_counters pc;
    mroce_sim_pool_get_counters(mroce_sim_topo_pool(x->t), &pc);
    uint64_t v[6] = {
        (uint64_t)x->n_settled, exp_meter_busy(x), pc.in_flight,
        exp_own_events(x),      x->g.over_budget,  x->settle_ps,
    };
    int err = exp_par_reduce(x, v, 4, 2);
    if (err)
        return err;
    x->g.settled = v[0];
    x->g.busy = v[1];
    x->g.in_flight = v[2];
    x->g.events = v[3];
    x->g.over_budget = v[4];
    x->g.settle_ps = v[5];
    return 0;
}

/* ---- Exchanges ---- */

struct exp_box {
    uint8_t *b;
    size_t n, cap;
};

static int exp_box_add(struct exp_box *bx, const void *rec, size_t n)
{
    if (bx->n + n > bx->cap) {
        size_t cap = bx->cap ? 2 * bx->cap : 4096;
        while (cap < bx->n + n)
            cap *= 2;
        uint8_t *b = realloc(bx->b, cap);
        if (!b)
            return MROCE_ENOMEM;
        bx->b = b;
        bx->cap = cap;
    }
    memcpy(bx->b + bx->n, rec, n);
    bx->n += n;
    return 0;
}

/* Sends box[r] to rank r; *in, *n_in: everything received (comm memory,
 * valid until the next exchange). A local failure on any rank fails
 * every rank's exchange (the reduction after it). */
static int exp_swap(struct exp *x, struct exp_box *box, int err,
                    const uint8_t **in, size_t *n_in)
{
    int R = x->ranks;
    const void **out = calloc((size_t)R, sizeof(*out));
    size_t *len = calloc((size_t)R, sizeof(*len));
    size_t *in_len = calloc((size_t)R, sizeof(*in_len));
    uint64_t bad = err || !out || !len || !in_len;
    int e = exp_par_reduce(x, &bad, 0, 1);
    if (!e && bad)
        e = err ? err : MROCE_ENOMEM;
    const void *p = NULL;
    for (int r = 0; !e && r < R; r++) {
        out[r] = box[r].b;
        len[r] = box[r].n;
    }
    if (!e && R > 1)
        e = x->part_comm->alltoallv(x->part_comm->ud, out, len, &p, in_len);
    *n_in = 0;
    for (int r = 0; !e && r < R; r++)
        *n_in += in_len[r];
    *in = p;
    free(out);
    free(len);
    free(in_len);
    return e;
}

static void exp_boxes_free(struct exp_box *box, int n)
{
    for (int r = 0; box && r < n; r++)
        free(box[r].b);
    free(box);
}

/* A flow end's half of the connection, for the rank of the other end. */
struct exp_flow_rec {
    uint32_t flow, end; /* end: 0 source, 1 destination */
    uint64_t raddr;
    uint32_t rkey, pad;
    struct mroce_conn_params p;
};

static int exp_flow_recs(struct exp *x, struct exp_box *box)
{
    int err = 0;
    for (int i = 0; !err && i < x->n_flows; i++) {
        struct exp_flow *f = &x->fl[i];
        int s = f->pub->src, d = f->pub->dst;
        bool ls = exp_local(x, s), ld = exp_local(x, d);
        struct exp_flow_rec r = {.flow = (uint32_t)i};
        if (ls && !ld) {
            r.p = f->sp;
            err = exp_box_add(&box[exp_owner(x, d)], &r, sizeof(r));
        } else if (ld && !ls) {
            r.end = 1;
            r.p = f->rp;
            r.raddr = f->raddr;
            r.rkey = f->rkey;
            err = exp_box_add(&box[exp_owner(x, s)], &r, sizeof(r));
        }
    }
    return err;
}

static int exp_flow_take(struct exp *x, const uint8_t *in, size_t n)
{
    if (n % sizeof(struct exp_flow_rec))
        return MROCE_EPROTO;
    for (size_t off = 0; off < n; off += sizeof(struct exp_flow_rec)) {
        struct exp_flow_rec r;
        memcpy(&r, in + off, sizeof(r));
        if (r.flow >= (uint32_t)x->n_flows || r.end > 1)
            return MROCE_EPROTO;
        struct exp_flow *f = &x->fl[r.flow];
        if (!exp_local(x, r.end ? f->pub->src : f->pub->dst))
            return MROCE_EPROTO; /* not ours */
        if (r.end) {
            f->rp = r.p;
            f->raddr = r.raddr;
            f->rkey = r.rkey;
        } else {
            f->sp = r.p;
        }
    }
    return 0;
}

int exp_par_flows(struct exp *x, int err)
{
    if (x->ranks == 1)
        return err;
    struct exp_box *box = calloc((size_t)x->ranks, sizeof(*box));
    if (!err)
        err = box ? exp_flow_recs(x, box) : MROCE_ENOMEM;
    const uint8_t *in;
    size_t n;
    err = exp_swap(x, box, err, &in, &n);
    if (!err)
        err = exp_flow_take(x, in, n);
    exp_boxes_free(box, x->ranks);
    if (err && !x->res->error[0])
        exp_fail(x, err, "exchanging connections: %s", mroce_strerror(err));
    return err;
}

/* ---- Collectives: connection halves and buffers ---- */

#define EXP_REC_CONN 0 /* a's connection to b */
#define EXP_REC_BUFS 1 /* a's three buffers */

struct exp_coll_rec {
    uint32_t type;
    int32_t a, b;
    uint32_t pad;
    struct mroce_conn_params p;
    struct mroce_coll_buf_desc d[MROCE_COLL_N_BUFS];
};

static int exp_coll_recs(struct exp *x, struct exp_box *box)
{
    const struct mroce_coll_comm *cm = x->comm;
    int n = cm->n, err = 0;
    for (int a = 0; !err && a < n; a++) {
        if (!exp_local(x, a))
            continue;
        struct exp_coll_rec r = {.type = EXP_REC_BUFS, .a = a};
        for (int w = 0; w < MROCE_COLL_N_BUFS; w++)
            r.d[w] = (struct mroce_coll_buf_desc){
                mroce_coll_raddr(&cm->rank[a], w, 0),
                mroce_coll_rkey(&cm->rank[a], w), cm->buf_bytes};
        for (int q = 0; !err && q < x->ranks; q++)
            if (q != x->rank)
                err = exp_box_add(&box[q], &r, sizeof(r));
        for (int b = 0; !err && b < n; b++) {
            if (!cm->rank[a].conn[b] || exp_local(x, b))
                continue;
            struct exp_coll_rec c = {.type = EXP_REC_CONN, .a = a, .b = b};
            mroce_conn_get_params(cm->rank[a].conn[b], &c.p);
            err = exp_box_add(&box[exp_owner(x, b)], &c, sizeof(c));
        }
    }
    return err;
}

static int exp_coll_take(struct exp *x, const uint8_t *in, size_t n)
{
    struct mroce_coll_comm *cm = x->comm;
    if (n % sizeof(struct exp_coll_rec))
        return MROCE_EPROTO;
    for (size_t off = 0; off < n; off += sizeof(struct exp_coll_rec)) {
        struct exp_coll_rec r;
        memcpy(&r, in + off, sizeof(r));
        if (r.a < 0 || r.a >= cm->n || exp_local(x, r.a))
            return MROCE_EPROTO;
        if (r.type == EXP_REC_BUFS) {
            memcpy(cm->rank[r.a].desc, r.d, sizeof(r.d));
            continue;
        }
        if (r.type != EXP_REC_CONN || r.b < 0 || r.b >= cm->n ||
            !exp_local(x, r.b))
            return MROCE_EPROTO;
        struct mroce_conn_params *p = malloc(sizeof(*p));
        if (!p)
            return MROCE_ENOMEM;
        *p = r.p;
        free(x->cpeer[(size_t)r.b * (size_t)cm->n + (size_t)r.a]);
        x->cpeer[(size_t)r.b * (size_t)cm->n + (size_t)r.a] = p;
    }
    return 0;
}

int exp_par_coll(struct exp *x, int err)
{
    if (x->ranks == 1)
        return err;
    size_t n = x->comm ? (size_t)x->comm->n : 0;
    x->cpeer = err ? NULL : calloc(n * n, sizeof(*x->cpeer));
    struct exp_box *box = calloc((size_t)x->ranks, sizeof(*box));
    if (!err)
        err = box && x->cpeer ? exp_coll_recs(x, box) : MROCE_ENOMEM;
    const uint8_t *in;
    size_t len;
    err = exp_swap(x, box, err, &in, &len);
    if (!err)
        err = exp_coll_take(x, in, len);
    exp_boxes_free(box, x->ranks);
    if (err && !x->res->error[0])
        exp_fail(x, err, "exchanging connections: %s", mroce_strerror(err));
    return err;
}

const struct mroce_conn_params *exp_par_coll_peer(const struct exp *x, int me,
                                                  int peer)
{
    return x->cpeer ? x->cpeer[(size_t)me * (size_t)x->comm->n + (size_t)peer]
                    : NULL;
}

void exp_par_coll_free(struct exp *x)
{
    size_t n = x->comm ? (size_t)x->comm->n : 0;
    for (size_t i = 0; x->cpeer && i < n * n; i++)
        free(x->cpeer[i]);
    free(x->cpeer);
    x->cpeer = NULL;
}

/* ---- Merging every rank's part into rank 0's ---- */

#define EXP_WORDS(T) (sizeof(T) / sizeof(uint64_t))

/* Counters are structs of uint64_t only: they travel as words. */
_Static_assert(sizeof(struct mroce_sim_pool_counters) % 8 == 0, "words");
_Static_assert(sizeof(struct mroce_sim_link_counters) % 8 == 0, "words");
_Static_assert(sizeof(struct mroce_sim_port_counters) % 8 == 0, "words");
_Static_assert(sizeof(struct mroce_sim_nic_port_counters) % 8 == 0, "words");

/* Walks every counter of the topology in one order: pack (load false)
 * copies them into v, unpack (load true) loads v into the objects.
 * Returns the words used. */
static size_t exp_topo_words(struct exp *x, uint64_t *v, bool load)
{
    struct mroce_sim_topo *t = x->t;
    size_t n = 0;
    struct mroce_sim_pool_counters pc;
    if (load) {
        memcpy(&pc, v, sizeof(pc));
        mroce_sim_pool_load_counters(mroce_sim_topo_pool(t), &pc);
    } else if (v) {
        mroce_sim_pool_get_counters(mroce_sim_topo_pool(t), &pc);
        memcpy(v, &pc, sizeof(pc));
    }
    n += EXP_WORDS(pc);
    for (int i = 0; i < mroce_sim_topo_n_links(t); i++) {
        struct mroce_sim_link *l = mroce_sim_topo_link_info(t, i)->link;
        struct mroce_sim_link_counters lc;
        if (load) {
            memcpy(&lc, v + n, sizeof(lc));
            mroce_sim_link_load_counters(l, &lc);
        } else if (v) {
            mroce_sim_link_get_counters(l, &lc);
            memcpy(v + n, &lc, sizeof(lc));
        }
        n += EXP_WORDS(lc);
    }
    for (int i = 0; i < mroce_sim_topo_n_switches(t); i++) {
        struct mroce_sim_switch *sw = mroce_sim_topo_switch(t, i);
        for (int p = 0; p < mroce_sim_switch_n_ports(sw); p++) {
            struct mroce_sim_port_counters c;
            if (load) {
                memcpy(&c, v + n, sizeof(c));
                mroce_sim_switch_load_port_counters(sw, p, &c);
            } else if (v) {
                mroce_sim_switch_get_port_counters(sw, p, &c);
                memcpy(v + n, &c, sizeof(c));
            }
            n += EXP_WORDS(c);
        }
    }
    for (int h = 0; h < mroce_sim_topo_n_hosts(t); h++) {
        struct mroce_sim_nic *nic =
            mroce_sim_host_nic(mroce_sim_topo_host(t, h));
        for (int p = 0; p < mroce_sim_nic_n_ports(nic); p++) {
            struct mroce_sim_nic_port_counters c;
            if (load) {
                memcpy(&c, v + n, sizeof(c));
                mroce_sim_nic_load_port_counters(nic, p, &c);
            } else if (v) {
                mroce_sim_nic_get_port_counters(nic, p, &c);
                memcpy(v + n, &c, sizeof(c));
            }
            n += EXP_WORDS(c);
        }
    }
    return n;
}

static int exp_merge_topo(struct exp *x)
{
    size_t n = exp_topo_words(x, NULL, false);
    uint64_t *v = malloc(n * sizeof(*v));
    uint64_t bad = !v;
    int err = exp_par_reduce(x, &bad, 0, 1);
    if (!err && bad)
        err = MROCE_ENOMEM;
    if (!err) {
        exp_topo_words(x, v, false);
        err = exp_par_reduce(x, v, n, 0);
    }
    if (!err && x->rank == 0)
        exp_topo_words(x, v, true);
    free(v);
    return err;
}

/* Per flow: the destination's FCT and data check, the source's
 * completions, status and counters (zero where a rank has no end). */
#define EXP_FLOW_WORDS 13

static void exp_flow_pack(const struct exp_flow *f, uint64_t *v)
{
    const struct mroce_sim_exp_flow *p = f->pub;
    uint64_t w[EXP_FLOW_WORDS] = {
        p->fct_ps,    p->settle_ps, (uint64_t)(int64_t)p->status,
        f->n_wc,      p->data_ok,   p->retx_pkts,
        p->data_pkts, p->timeouts,  f->lost.sack,
        f->lost.rack, f->lost.pto,  f->lost.rto,
        f->lost.rnr,
    };
    memcpy(v, w, sizeof(w));
}

static void exp_flow_unpack(struct exp_flow *f, const uint64_t *v)
{
    struct mroce_sim_exp_flow *p = f->pub;
    p->fct_ps = v[0];
    p->settle_ps = v[1];
    p->status = (int)(int64_t)v[2];
    f->n_wc = (uint32_t)v[3];
    p->data_ok = v[4] != 0;
    p->retx_pkts = v[5];
    p->data_pkts = v[6];
    p->timeouts = v[7];
    f->lost = (struct mroce_sim_exp_lost){v[8], v[9], v[10], v[11], v[12]};
}

static int exp_merge_flows(struct exp *x)
{
    size_t n = (size_t)x->n_flows * EXP_FLOW_WORDS;
    if (!x->fl || !n)
        return 0;
    uint64_t *v = calloc(n, sizeof(*v));
    uint64_t bad = !v;
    int err = exp_par_reduce(x, &bad, 0, 1);
    if (!err && bad)
        err = MROCE_ENOMEM;
    for (int i = 0; !err && i < x->n_flows; i++)
        exp_flow_pack(&x->fl[i], v + (size_t)i * EXP_FLOW_WORDS);
    if (!err)
        err = exp_par_reduce(x, v, n, 0);
    for (int i = 0; !err && x->rank == 0 && i < x->n_flows; i++)
        exp_flow_unpack(&x->fl[i], v + (size_t)i * EXP_FLOW_WORDS);
    free(v);
    return err;
}

/* The receivers' counts and the series: sums, except each host's last
 * placement and each sample's deepest queue (maxima). Every rank took
 * the same samples (the sampler is LP 0's); the lengths are checked. */
static int exp_merge_meter(struct exp *x)
{
    struct exp_meter *m = &x->m;
    struct mroce_sim_exp_result *r = x->res;
    size_t ns = (size_t)r->n_samples, nh = (size_t)x->c.hosts;
    uint64_t len[2] = {ns, MROCE_SIM_NEVER - ns};
    int err = exp_par_reduce(x, len, 0, 2);
    if (!err && (len[0] != ns || MROCE_SIM_NEVER - len[1] != ns))
        err = MROCE_EPROTO;
    size_t n_sum = 6 + 3 * ns, n = n_sum + nh + ns;
    uint64_t *v = err ? NULL : calloc(n, sizeof(*v));
    if (!err && !v)
        err = MROCE_ENOMEM; /* the reduction below fails on every rank */
    uint64_t *s = v;
    if (v) {
        uint64_t head[6] = {m->rx_data, m->rx_ce,  m->ooo,
                            m->rx_wire, m->placed, m->victim_placed};
        memcpy(s, head, sizeof(head));
        for (size_t i = 0; i < ns; i++) {
            s[6 + i] = m->sb[i];
            s[6 + ns + i] = m->svb[i];
            s[6 + 2 * ns + i] = r->samples[i].q_dst_bytes;
            s[n_sum + nh + i] = r->samples[i].qbytes;
        }
        if (m->last_rx)
            memcpy(s + n_sum, m->last_rx, nh * sizeof(*s));
    }
    uint64_t bad = !v;
    if (!err && (err = exp_par_reduce(x, &bad, 0, 1)) == 0 && bad)
        err = MROCE_ENOMEM;
    if (!err)
        err = exp_par_reduce(x, v, n_sum, nh + ns);
    if (!err && x->rank == 0) {
        m->rx_data = s[0], m->rx_ce = s[1], m->ooo = s[2];
        m->rx_wire = s[3], m->placed = s[4], m->victim_placed = s[5];
        for (size_t i = 0; i < ns; i++) {
            m->sb[i] = s[6 + i];
            m->svb[i] = s[6 + ns + i];
            r->samples[i].q_dst_bytes = s[6 + 2 * ns + i];
            r->samples[i].qbytes = s[n_sum + nh + i];
        }
        if (m->last_rx)
            memcpy(m->last_rx, s + n_sum, nh * sizeof(*s));
    }
    free(v);
    return err;
}

/* The incast's drops at each sample, summed. */
static int exp_merge_conv(struct exp *x)
{
    struct exp_conv *c = &x->conv;
    uint64_t len[2] = {(uint64_t)c->n_drops,
                       MROCE_SIM_NEVER - (uint64_t)c->n_drops};
    int err = exp_par_reduce(x, len, 0, 2);
    if (err || !len[0])
        return err;
    if (len[0] != (uint64_t)c->n_drops ||
        MROCE_SIM_NEVER - len[1] != (uint64_t)c->n_drops)
        return MROCE_EPROTO;
    return exp_par_reduce(x, c->drops, (size_t)c->n_drops, 0);
}

/* Engines' state (sums; unit sizes: the largest), payload accounting,
 * the fabric's events. */
static int exp_merge_totals(struct exp *x)
{
    exp_engine_bytes(x);
    const struct mroce_state_bytes *e = &x->res->engine;
    struct mroce_sim_vmem_counters vc = {0};
    if (x->vm)
        mroce_sim_vmem_get_counters(x->vm, &vc);
    uint64_t v[] = {exp_own_events(x), e->conns, e->paths, e->conn_bytes,
                    e->path_bytes, e->dsn_bytes, e->psn_bytes, e->ctx_bytes,
                    e->total, vc.placements, vc.placed_bytes, vc.fills,
                    vc.misaligned, vc.bad_tags, vc.duplicates, vc.faults,
                    x->vm ? mroce_sim_vmem_bytes(x->vm) : 0,
                    /* maxima */
                    e->per_conn, e->per_path, e->per_dsn_slot, e->per_psn_slot};
    int err = exp_par_reduce(x, v, 17, 4);
    if (err)
        return err;
    x->mg.events = v[0];
    x->mg.engine = (struct mroce_state_bytes){
        .conns = v[1],
        .paths = v[2],
        .per_conn = v[17],
        .per_path = v[18],
        .per_dsn_slot = v[19],
        .per_psn_slot = v[20],
        .conn_bytes = v[3],
        .path_bytes = v[4],
        .dsn_bytes = v[5],
        .psn_bytes = v[6],
        .ctx_bytes = v[7],
        .total = v[8],
    };
    x->mg.vmem = (struct mroce_sim_vmem_counters){v[9],  v[10], v[11], v[12],
                                                  v[13], v[14], v[15]};
    x->mg.vmem_bytes = v[16];
    return 0;
}

/* How the run went on each rank: events, time in synchronisation, what
 * crossed the cut (result fields ranks, rank_events, ...). */
/* Per rank: events, seconds in the comm, running events (wall and CPU),
 * importing. */
#define EXP_PER_RANK 5

static int exp_merge_run(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    int R = x->ranks;
    struct mroce_sim_prun_stats st;
    mroce_sim_prun_get_stats(x->run, &st);
    int64_t insns = mroce_sim_perfctr_read(&x->pc);
    struct rusage ru;
    uint64_t rss_kb =
        getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss : 0;
    size_t n = EXP_PER_RANK * (size_t)R + 4;
    uint64_t *v = calloc(n + 2, sizeof(*v));
    r->rank_events = calloc((size_t)R, sizeof(*r->rank_events));
    r->rank_sync_s = calloc((size_t)R, sizeof(double));
    r->rank_run_s = calloc((size_t)R, sizeof(double));
    r->rank_import_s = calloc((size_t)R, sizeof(double));
    r->rank_run_cpu_s = calloc((size_t)R, sizeof(double));
    uint64_t bad = !v || !r->rank_events || !r->rank_sync_s || !r->rank_run_s ||
                   !r->rank_import_s || !r->rank_run_cpu_s;
    int err = exp_par_reduce(x, &bad, 0, 1);
    if (err || bad) {
        free(v);
        return err ? err : MROCE_ENOMEM;
    }
    v[x->rank] = exp_own_events(x);
    v[R + x->rank] = (uint64_t)(st.sync_s * 1e9);
    v[2 * R + x->rank] = (uint64_t)(st.run_s * 1e9);
    v[3 * R + x->rank] = (uint64_t)(st.import_s * 1e9);
    v[4 * R + x->rank] = (uint64_t)(st.run_cpu_s * 1e9);
    uint64_t *t = v + EXP_PER_RANK * R;
    t[0] = st.msgs_out;
    t[1] = st.bytes_out;
    t[2] = insns < 0 ? 0 : (uint64_t)insns;
    t[3] = insns < 0;
    t[4] = st.windows;
    t[5] = rss_kb;
    err = exp_par_reduce(x, v, n, 2);
    for (int q = 0; !err && q < R; q++) {
        r->rank_events[q] = v[q];
        r->rank_sync_s[q] = (double)v[R + q] / 1e9;
        r->rank_run_s[q] = (double)v[2 * R + q] / 1e9;
        r->rank_import_s[q] = (double)v[3 * R + q] / 1e9;
        r->rank_run_cpu_s[q] = (double)v[4 * R + q] / 1e9;
        r->sync_wait_s += r->rank_sync_s[q] / R;
    }
    r->ranks = R;
    r->cut_msgs = t[0];
    r->cut_bytes = t[1];
    x->mg.insns = t[3] ? -1 : (int64_t)t[2];
    r->windows = t[4];
    x->mg.peak_rss_mb = (double)t[5] / 1024.0; /* KiB on Linux */
    r->lookahead_ps = x->part->lookahead_ps;
    r->window_ps = mroce_sim_prun_window(x->run);
    free(v);
    return err;
}

int exp_par_merge(struct exp *x)
{
    int err = exp_merge_flows(x);
    if (!err)
        err = exp_merge_topo(x);
    if (!err)
        err = exp_merge_meter(x);
    if (!err)
        err = exp_merge_conv(x);
    if (!err)
        err = exp_merge_totals(x);
    if (!err)
        err = exp_counters_merge(x);
    if (!err)
        err = exp_merge_run(x);
    return err;
}

int exp_par_agree(struct exp *x, int err)
{
    uint64_t bad = err != 0;
    int e = exp_par_reduce(x, &bad, 0, 1);
    if (e)
        return err ? err : exp_fail(x, e, "ranks: %s", mroce_strerror(e));
    if (bad && !err)
        return exp_fail(x, MROCE_EPROTO, "another rank failed");
    return err;
}

int mroce_sim_exp_partition(const struct mroce_sim_exp_cfg *cfg, int ranks,
                            FILE *f, struct mroce_sim_exp_result *res)
{
    memset(res, 0, sizeof(*res));
    struct exp x = {.res = res, .ranks = ranks};
    mroce_sim_exp_cfg_resolve(cfg, &x.c);
    res->cfg = x.c;
    int err = exp_check(&x);
    if (!err)
        err = exp_topo(&x);
    char why[sizeof(res->error)];
    if (!err && (err = mroce_sim_part_create(x.t, ranks, &x.part, why,
                                             sizeof(why))) != 0)
        exp_fail(&x, err, "%s", err == MROCE_EINVAL ? why : "no memory");
    if (!err)
        mroce_sim_part_print(f, x.part, x.t);
    mroce_sim_part_destroy(x.part);
    mroce_sim_topo_destroy(x.t);
    return err;
}
