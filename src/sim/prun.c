/* The parallel run of one partition; see prun.h for the model.
 *
 * Messages (one outbox per destination rank, 8-byte aligned records):
 *   header  arrival time, event key, link id, type (frame or PFC signal),
 *           PFC priority and on/off;
 *   frame   the packet's fabric fields and its payload bytes. Ranks run
 *           the same binary on the same architecture, so the packet
 *           metadata travels as its C struct.
 * The payload travels whole: in payload-free runs its tags and CRC are
 * what the receiving engine checks. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "sim/prun.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/link.h"
#include "sim/pkt.h"

#define PRUN_FRAME 1
#define PRUN_PAUSE 2
#define PRUN_DEFAULT_QUANTUM MROCE_SIM_PS_PER_US

struct prun_hdr {
    uint64_t t, key;
    uint32_t link;
    uint8_t type, prio, on, pad;
};

struct prun_frame {
    struct mroce_pkt_meta meta;
    uint64_t flow_hash, inject_ps;
    uint32_t len, wire_bytes, epoch;
    int32_t src_host, dst_host;
    uint8_t prio, trimmed, hops, squeezed;
    uint32_t body, pad; /* bytes that follow: len, or the squeezed form's */
};

struct prun_box {
    uint8_t *b;
    size_t n, cap;
};

/* A cut link's hook context: where its frames and signals go. */
struct prun_link {
    struct mroce_sim_prun *p;
    int id;
    int to_dst, to_src; /* ranks of the receiving and sending ends */
};

struct mroce_sim_prun {
    struct mroce_sim_topo *t;
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    const struct mroce_sim_part *part;
    const struct mroce_sim_comm *comm;
    int rank, size;
    uint64_t window;
    struct prun_link *links; /* [n_links]; id -1 where not cut */
    int n_links;
    struct prun_box *out; /* [size] */
    const void **out_ptr;
    size_t *out_len, *in_len;
    bool oom;
    double import_wall; /* wall time of imports, out of sync_s */
    struct mroce_sim_prun_stats st;
};

static double prun_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double prun_wall(void)
{
    return prun_clock(CLOCK_MONOTONIC);
}

static size_t prun_pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Room for n more bytes at the end of box; NULL if memory ran out. */
static uint8_t *prun_box_put(struct mroce_sim_prun *p, int to, size_t n)
{
    struct prun_box *b = &p->out[to];
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->b, cap);
        if (!q) {
            p->oom = true;
            return NULL;
        }
        b->b = q;
        b->cap = cap;
    }
    uint8_t *at = b->b + b->n;
    b->n += n;
    p->st.msgs_out++;
    p->st.bytes_out += n;
    return at;
}

/* ---- The link hooks (sending side) ---- */

static void prun_arrive(void *ud, struct mroce_sim_link *l,
                        const struct mroce_sim_pkt *pk, uint64_t t,
                        uint64_t key)
{
    (void)l;
    struct prun_link *pl = ud;
    uint32_t body = pk->squeezed ? pk->clen : pk->len; /* kept squeezed */
    size_t n =
        sizeof(struct prun_hdr) + sizeof(struct prun_frame) + prun_pad8(body);
    uint8_t *at = prun_box_put(pl->p, pl->to_dst, n);
    if (!at)
        return;
    struct prun_hdr h = {
        .t = t, .key = key, .link = (uint32_t)pl->id, .type = PRUN_FRAME};
    struct prun_frame f = {
        .meta = pk->meta,
        .flow_hash = pk->flow_hash,
        .inject_ps = pk->inject_ps,
        .len = pk->len,
        .wire_bytes = pk->wire_bytes,
        .epoch = pk->epoch,
        .src_host = pk->src_host,
        .dst_host = pk->dst_host,
        .prio = pk->prio,
        .trimmed = pk->trimmed,
        .hops = pk->hops,
        .squeezed = pk->squeezed,
        .body = body,
    };
    memcpy(at, &h, sizeof(h));
    memcpy(at + sizeof(h), &f, sizeof(f));
    memcpy(at + sizeof(h) + sizeof(f), pk->data, body);
}

static void prun_pause(void *ud, struct mroce_sim_link *l, int prio, bool on,
                       uint64_t t, uint64_t key)
{
    (void)l;
    struct prun_link *pl = ud;
    uint8_t *at = prun_box_put(pl->p, pl->to_src, sizeof(struct prun_hdr));
    if (!at)
        return;
    struct prun_hdr h = {.t = t,
                         .key = key,
                         .link = (uint32_t)pl->id,
                         .type = PRUN_PAUSE,
                         .prio = (uint8_t)prio,
                         .on = on};
    memcpy(at, &h, sizeof(h));
}

/* ---- Receiving ---- */

static int prun_take_frame(struct mroce_sim_prun *p, struct mroce_sim_link *l,
                           const struct prun_hdr *h, const uint8_t *b,
                           size_t left)
{
    struct prun_frame f;
    if (left < sizeof(f))
        return MROCE_EPROTO;
    memcpy(&f, b, sizeof(f));
    /* a squeezed packet stays squeezed: this rank's pool must rebuild it */
    bool sq = f.squeezed != 0;
    if (left - sizeof(f) < prun_pad8(f.body) || f.prio >= MROCE_SIM_NPRIO ||
        f.squeezed > 1 || (!sq && f.body != f.len) ||
        (sq && !mroce_sim_pool_squeezes(p->pool)))
        return MROCE_EPROTO;
    struct mroce_sim_pkt *pk = mroce_sim_pkt_import(p->pool, f.body);
    if (!pk)
        return MROCE_ENOMEM;
    memcpy(pk->data, b + sizeof(f), f.body);
    pk->squeezed = f.squeezed;
    pk->clen = sq ? f.body : 0;
    pk->len = f.len;
    pk->wire_bytes = f.wire_bytes;
    pk->meta = f.meta;
    pk->flow_hash = f.flow_hash;
    pk->inject_ps = f.inject_ps;
    pk->src_host = f.src_host;
    pk->dst_host = f.dst_host;
    pk->epoch = f.epoch;
    pk->in_port = 0;
    pk->prio = f.prio;
    pk->trimmed = f.trimmed;
    pk->hops = f.hops;
    return mroce_sim_link_arrive_at(l, pk, h->t, h->key) ? 0 : MROCE_ENOMEM;
}

/* One record at b (left bytes); returns its length or MROCE_E*. A record
 * for an LP this rank does not own, or due before the window that just
 * ended, would break the order: refused. */
static long prun_take(struct mroce_sim_prun *p, const uint8_t *b, size_t left)
{
    struct prun_hdr h;
    if (left < sizeof(h))
        return MROCE_EPROTO;
    memcpy(&h, b, sizeof(h));
    if (h.link >= (uint32_t)p->n_links || p->links[h.link].id < 0 ||
        h.t <= mroce_sim_ev_now(p->ev))
        return MROCE_EPROTO;
    const struct prun_link *pl = &p->links[h.link];
    struct mroce_sim_link *l = mroce_sim_topo_link_info(p->t, pl->id)->link;
    if (h.type == PRUN_PAUSE) {
        if (pl->to_src != p->rank || h.prio >= MROCE_SIM_NPRIO)
            return MROCE_EPROTO;
        return mroce_sim_link_pause_at(l, h.prio, h.on, h.t, h.key)
                   ? (long)sizeof(h)
                   : MROCE_ENOMEM;
    }
    if (h.type != PRUN_FRAME || pl->to_dst != p->rank)
        return MROCE_EPROTO;
    const uint8_t *body = b + sizeof(h);
    int err = prun_take_frame(p, l, &h, body, left - sizeof(h));
    if (err)
        return err;
    struct prun_frame f;
    memcpy(&f, body, sizeof(f));
    return (long)(sizeof(h) + sizeof(f) + prun_pad8(f.body));
}

static int prun_take_all(struct mroce_sim_prun *p, const uint8_t *in,
                         size_t total)
{
    size_t off = 0;
    while (off < total) {
        long n = prun_take(p, in + off, total - off);
        if (n < 0)
            return (int)n;
        off += (size_t)n;
        p->st.msgs_in++;
    }
    p->st.bytes_in += total;
    return 0;
}

/* Step (1): hands the outboxes over and schedules what came in. */
static int prun_exchange(struct mroce_sim_prun *p)
{
    if (p->size == 1)
        return p->oom ? MROCE_ENOMEM : 0;
    for (int r = 0; r < p->size; r++) {
        p->out_ptr[r] = p->out[r].b;
        p->out_len[r] = p->out[r].n;
    }
    const void *in;
    int err =
        p->comm->alltoallv(p->comm->ud, p->out_ptr, p->out_len, &in, p->in_len);
    size_t total = 0;
    for (int r = 0; !err && r < p->size; r++) {
        total += p->in_len[r];
        p->out[r].n = 0;
    }
    double t0 = prun_wall(), c0 = prun_clock(CLOCK_THREAD_CPUTIME_ID);
    if (!err)
        err = prun_take_all(p, in, total);
    p->import_wall += prun_wall() - t0;
    p->st.import_s += prun_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
    return err ? err : p->oom ? MROCE_ENOMEM : 0;
}

/* ---- Creation ---- */

static void prun_hook(struct mroce_sim_prun *p, int id)
{
    const struct mroce_sim_link_info *li = mroce_sim_topo_link_info(p->t, id);
    uint32_t a, b;
    mroce_sim_link_get_lps(li->link, &a, &b);
    p->links[id] = (struct prun_link){.p = p,
                                      .id = id,
                                      .to_dst = p->part->owner[b],
                                      .to_src = p->part->owner[a]};
    struct mroce_sim_link_remote r = {
        .arrive = prun_arrive, .pause = prun_pause, .ud = &p->links[id]};
    mroce_sim_link_set_remote(li->link, &r);
}

int mroce_sim_prun_create(struct mroce_sim_topo *t,
                          const struct mroce_sim_part *part,
                          const struct mroce_sim_comm *comm,
                          uint64_t quantum_ps, struct mroce_sim_prun **out)
{
    *out = NULL;
    int size = mroce_sim_comm_size(comm);
    if (!part || part->n_ranks != size ||
        part->n_lps != mroce_sim_topo_n_lps(t))
        return MROCE_EINVAL;
    struct mroce_sim_prun *p = calloc(1, sizeof(*p));
    if (!p)
        return MROCE_ENOMEM;
    p->t = t;
    p->ev = mroce_sim_topo_ev(t);
    p->pool = mroce_sim_topo_pool(t);
    p->part = part;
    p->comm = comm;
    p->rank = mroce_sim_comm_rank(comm);
    p->size = size;
    quantum_ps = quantum_ps ? quantum_ps : PRUN_DEFAULT_QUANTUM;
    p->window =
        part->lookahead_ps < quantum_ps ? part->lookahead_ps : quantum_ps;
    p->n_links = mroce_sim_topo_n_links(t);
    p->links = calloc((size_t)p->n_links + 1, sizeof(*p->links));
    p->out = calloc((size_t)size, sizeof(*p->out));
    p->out_ptr = calloc((size_t)size, sizeof(*p->out_ptr));
    p->out_len = calloc((size_t)size, sizeof(*p->out_len));
    p->in_len = calloc((size_t)size, sizeof(*p->in_len));
    if (!p->links || !p->out || !p->out_ptr || !p->out_len || !p->in_len) {
        mroce_sim_prun_destroy(p);
        return MROCE_ENOMEM;
    }
    for (int i = 0; i < p->n_links; i++) {
        p->links[i].id = -1;
        if (mroce_sim_part_is_cut(part, mroce_sim_topo_link_info(t, i)->link))
            prun_hook(p, i);
    }
    *out = p;
    return 0;
}

void mroce_sim_prun_destroy(struct mroce_sim_prun *p)
{
    if (!p)
        return;
    for (int i = 0; p->links && i < p->n_links; i++)
        if (p->links[i].id >= 0)
            mroce_sim_link_set_remote(mroce_sim_topo_link_info(p->t, i)->link,
                                      NULL);
    for (int r = 0; p->out && r < p->size; r++)
        free(p->out[r].b);
    free(p->links);
    free(p->out);
    free(p->out_ptr);
    free(p->out_len);
    free(p->in_len);
    free(p);
}

/* ---- Running ---- */

/* Steps (1) and (2): the driver's values, the earliest pending time
 * (as NEVER - t, so that a maximum finds it) and an error flag. */
static int prun_sync(struct mroce_sim_prun *p,
                     const struct mroce_sim_prun_sync *s, uint64_t *v,
                     uint64_t *t_min)
{
    double t0 = prun_wall(), import0 = p->import_wall;
    int err = prun_exchange(p);
    int ns = s ? s->n_sum : 0, nm = s ? s->n_max : 0;
    if (s)
        s->fill(s->ud, v);
    v[ns + nm] = MROCE_SIM_NEVER - mroce_sim_ev_next_time(p->ev);
    v[ns + nm + 1] = err != 0;
    int cerr = mroce_sim_comm_allreduce(p->comm, v, (size_t)ns, (size_t)nm + 2);
    p->st.sync_s += prun_wall() - t0;
    p->st.sync_s -= p->import_wall - import0;
    p->st.windows++;
    *t_min = MROCE_SIM_NEVER - v[ns + nm];
    if (cerr)
        return cerr;
    if (v[ns + nm + 1])
        return err ? err : MROCE_EPROTO; /* another rank failed */
    return 0;
}

int mroce_sim_prun_run(struct mroce_sim_prun *p, uint64_t until_ps,
                       const struct mroce_sim_prun_sync *s)
{
    if (s && (s->n_sum < 0 || s->n_max < 0 ||
              s->n_sum + s->n_max > MROCE_SIM_PRUN_MAX_SYNC))
        return MROCE_EINVAL;
    uint64_t v[MROCE_SIM_PRUN_MAX_SYNC + 2];
    for (;;) {
        uint64_t t;
        int err = prun_sync(p, s, v, &t);
        if (err)
            return err;
        if (s && s->done(s->ud, v))
            return 1;
        if (t > until_ps || t == MROCE_SIM_NEVER) {
            mroce_sim_ev_run(p->ev, until_ps); /* nothing due: sets now */
            return 0;
        }
        uint64_t end = t + p->window - 1;
        end = end < t || end > until_ps ? until_ps : end;
        double t0 = prun_wall(), c0 = prun_clock(CLOCK_THREAD_CPUTIME_ID);
        mroce_sim_ev_run(p->ev, end);
        p->st.run_s += prun_wall() - t0;
        p->st.run_cpu_s += prun_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
    }
}

uint64_t mroce_sim_prun_window(const struct mroce_sim_prun *p)
{
    return p->window;
}

void mroce_sim_prun_set_window(struct mroce_sim_prun *p, uint64_t window_ps)
{
    p->window = window_ps ? window_ps : 1;
}

void mroce_sim_prun_get_stats(const struct mroce_sim_prun *p,
                              struct mroce_sim_prun_stats *out)
{
    *out = p->st;
}
