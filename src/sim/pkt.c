/* Simulated packets and their pool; see pkt.h. */
#include "sim/pkt.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/rng.h"

#define POOL_CHUNK 1024u
/* The small class holds ACKs, NACKs, probes and trimmed headers; an
 * MTU-sized buffer for each of them would multiply the memory of a
 * simulation whose queues are full of ACKs. */
#define POOL_SMALL_CAP 256u

struct pool_chunk {
    struct pool_chunk *next;
    /* packets, then their buffers, follow */
};

struct pool_class {
    struct mroce_sim_pkt *free;
    uint32_t cap; /* payload bytes per buffer */
};

struct mroce_sim_pool {
    struct pool_class cls[2]; /* [0] small, [1] big */
    struct pool_chunk *chunks;
    uint32_t chunk;
    uint64_t taken; /* buffers out for an endpoint to write, not packets */
    struct mroce_sim_squeeze sq; /* squeeze set: payload-free packets */
    uint8_t *rebuild; /* squeezed packets rebuilt (the codec keeps it) */
    struct mroce_sim_pool_counters c;
};

static const char *const drop_names[MROCE_SIM_DROP_N] = {
    [MROCE_SIM_DROP_QUEUE] = "queue",
    [MROCE_SIM_DROP_HEADROOM] = "headroom",
    [MROCE_SIM_DROP_LINK_DOWN] = "link_down",
    [MROCE_SIM_DROP_LOSS] = "loss",
    [MROCE_SIM_DROP_NO_ROUTE] = "no_route",
    [MROCE_SIM_DROP_HOST] = "host",
};

const char *mroce_sim_drop_str(int reason)
{
    if (reason < 0 || reason >= MROCE_SIM_DROP_N)
        return "unknown";
    return drop_names[reason];
}

struct mroce_sim_pool *mroce_sim_pool_create(uint32_t max_payload,
                                             uint32_t chunk)
{
    if (max_payload == 0)
        return NULL;
    struct mroce_sim_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->cls[0].cap = POOL_SMALL_CAP;
    pool->cls[1].cap =
        max_payload > POOL_SMALL_CAP ? max_payload : POOL_SMALL_CAP;
    pool->chunk = chunk ? chunk : POOL_CHUNK;
    return pool;
}

void mroce_sim_pool_destroy(struct mroce_sim_pool *pool)
{
    if (!pool)
        return;
    struct pool_chunk *ch = pool->chunks;
    while (ch) {
        struct pool_chunk *next = ch->next;
        free(ch);
        ch = next;
    }
    free(pool->rebuild);
    free(pool);
}

uint32_t mroce_sim_pool_max_payload(const struct mroce_sim_pool *pool)
{
    return pool->cls[1].cap;
}

/* One allocation per chunk: header, packet structs, then buffers. */
static bool pool_grow(struct mroce_sim_pool *pool, int big)
{
    struct pool_class *cl = &pool->cls[big];
    size_t n = pool->chunk;
    size_t hdr = sizeof(struct pool_chunk);
    hdr = (hdr + _Alignof(struct mroce_sim_pkt) - 1) &
          ~(_Alignof(struct mroce_sim_pkt) - 1);
    size_t bytes = hdr + n * sizeof(struct mroce_sim_pkt) + n * cl->cap;
    struct pool_chunk *ch = calloc(1, bytes); /* buffers start zero */
    if (!ch)
        return false;
    ch->next = pool->chunks;
    pool->chunks = ch;
    struct mroce_sim_pkt *pk = (void *)((uint8_t *)ch + hdr);
    uint8_t *buf = (uint8_t *)(pk + n);
    for (size_t i = 0; i < n; i++) {
        pk[i].data = buf + i * cl->cap;
        pk[i].zero = 1;
        pk[i].big = (uint8_t)big;
        pk[i].next = cl->free;
        cl->free = &pk[i];
    }
    pool->c.allocated += n;
    pool->c.allocated_bytes += bytes;
    return true;
}

uint32_t mroce_sim_wire_bytes(uint32_t len, uint8_t family)
{
    return len + (family == MROCE_AF_INET6 ? MROCE_SIM_WIRE_OVERHEAD_V6
                                           : MROCE_SIM_WIRE_OVERHEAD_V4);
}

uint64_t mroce_sim_flow_hash(const struct mroce_pkt_meta *meta)
{
    uint64_t h = 17; /* IP protocol number of UDP */
    for (int i = 0; i < 16; i += 8) {
        uint64_t a, b;
        memcpy(&a, meta->src.ip + i, 8);
        memcpy(&b, meta->dst.ip + i, 8);
        h = mroce_sim_mix64(h ^ a);
        h = mroce_sim_mix64(h ^ b);
    }
    uint64_t ports = (uint64_t)meta->src_port << 16 | meta->dst_port;
    return mroce_sim_mix64(h ^ ports);
}

static struct mroce_sim_pkt *pool_get(struct mroce_sim_pool *pool, int big)
{
    struct pool_class *cl = &pool->cls[big];
    if (!cl->free && !pool_grow(pool, big))
        return NULL;
    struct mroce_sim_pkt *p = cl->free;
    cl->free = p->next;
    p->next = NULL;
    return p;
}

/* A big buffer back from its writer, who wrote [0, written): with a
 * codec, zero again (all of it if it was not zero before), so the next
 * payload-free fill need not write or check its zeros (pkt.h). */
static void pool_rezero(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p,
                        uint32_t written)
{
    if (!p->big)
        return;
    if (!pool->sq.squeeze) {
        p->zero = 0;
        return;
    }
    memset(p->data, 0, p->zero ? written : pool->cls[1].cap);
    p->zero = 1;
}

static void pool_unget(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p)
{
    struct pool_class *cl = &pool->cls[p->big];
    p->next = cl->free;
    cl->free = p;
}

/* Fills everything but the payload and counts the packet injected. */
static void pkt_init(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p,
                     const struct mroce_pkt_meta *meta, uint32_t len,
                     uint64_t now_ps)
{
    p->len = len;
    p->meta = *meta;
    p->wire_bytes = mroce_sim_wire_bytes(len, meta->src.family);
    p->flow_hash = mroce_sim_flow_hash(meta);
    p->inject_ps = now_ps;
    p->src_host = -1;
    p->dst_host = -1;
    p->epoch = 0;
    p->in_port = 0;
    p->prio = MROCE_SIM_PRIO_DATA;
    p->trimmed = 0;
    p->hops = 0;
    p->live = 1;
    p->squeezed = 0;
    p->clen = 0;
    p->written = len;
    pool->c.injected++;
    if (++pool->c.in_flight > pool->c.peak_in_flight)
        pool->c.peak_in_flight = pool->c.in_flight;
}

struct mroce_sim_pkt *mroce_sim_pkt_inject(struct mroce_sim_pool *pool,
                                           const struct mroce_pkt_meta *meta,
                                           const uint8_t *buf, uint32_t len,
                                           uint64_t now_ps)
{
    int big = len > pool->cls[0].cap;
    if (len > pool->cls[big].cap)
        return NULL;
    struct mroce_sim_pkt *p = pool_get(pool, big);
    if (!p)
        return NULL;
    memcpy(p->data, buf, len);
    pkt_init(pool, p, meta, len, now_ps);
    return p;
}

void mroce_sim_pkt_open(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p)
{
    if (pool->sq.open)
        pool->sq.open(pool->sq.ud, p->data, pool->cls[1].cap, p->zero != 0);
}

struct mroce_sim_pkt *mroce_sim_pkt_take(struct mroce_sim_pool *pool)
{
    struct mroce_sim_pkt *p = pool_get(pool, 1);
    pool->taken += p != NULL;
    if (p)
        mroce_sim_pkt_open(pool, p);
    return p;
}

/* What the endpoint wrote is not known: all of it is zeroed. */
void mroce_sim_pkt_untake(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p)
{
    pool->taken--;
    p->zero = 0;
    pool_rezero(pool, p, 0);
    pool_unget(pool, p);
}

struct mroce_sim_pkt *mroce_sim_pkt_commit(struct mroce_sim_pool *pool,
                                           struct mroce_sim_pkt *p,
                                           const struct mroce_pkt_meta *meta,
                                           uint32_t len, uint64_t now_ps)
{
    pool->taken--;
    if (len > pool->cls[1].cap) {
        p->zero = 0; /* written how far, unknown */
        pool_rezero(pool, p, 0);
        pool_unget(pool, p);
        return NULL;
    }
    bool small = len <= pool->cls[0].cap;
    struct mroce_sim_pkt *s =
        small || pool->sq.squeeze ? pool_get(pool, 0) : NULL;
    uint32_t clen = 0;
    if (pool->sq.squeeze) /* told of every packet: its state is per packet */
        clen = pool->sq.squeeze(pool->sq.ud, p->data, len, s ? s->data : NULL,
                                !small && s ? pool->cls[0].cap : 0);
    if (s && small) /* ACK-sized: keep the big one free */
        memcpy(s->data, p->data, len);
    if (s && (small || clen)) { /* a squeezed one is zero already */
        pool_rezero(pool, p, clen ? 0 : len);
        pool_unget(pool, p);
        p = s;
    } else if (s) {
        pool_unget(pool, s);
    }
    pkt_init(pool, p, meta, len, now_ps);
    p->squeezed = clen != 0;
    p->clen = clen;
    pool->c.squeezed += clen != 0;
    return p;
}

int mroce_sim_pool_set_squeeze(struct mroce_sim_pool *pool,
                               const struct mroce_sim_squeeze *s)
{
    if (s && !pool->rebuild && !(pool->rebuild = calloc(1, pool->cls[1].cap))) {
        pool->sq = (struct mroce_sim_squeeze){0};
        return MROCE_ENOMEM;
    }
    if (pool->rebuild) /* a codec finds zeros there at first (pkt.h) */
        memset(pool->rebuild, 0, pool->cls[1].cap);
    pool->sq = s ? *s : (struct mroce_sim_squeeze){0};
    return 0;
}

bool mroce_sim_pool_squeezes(const struct mroce_sim_pool *pool)
{
    return pool->sq.expand != NULL;
}

const uint8_t *mroce_sim_pkt_bytes(struct mroce_sim_pool *pool,
                                   const struct mroce_sim_pkt *p)
{
    if (!p->squeezed)
        return p->data;
    pool->sq.expand(pool->sq.ud, p->data, p->clen, pool->rebuild);
    return pool->rebuild;
}

void mroce_sim_pkt_bytes_done(struct mroce_sim_pool *pool,
                              const struct mroce_sim_pkt *p)
{
    if (p->squeezed)
        pool->sq.clean(pool->sq.ud, p->data, p->clen, pool->rebuild);
}

void mroce_sim_pkt_trim(struct mroce_sim_pkt *p, uint32_t keep)
{
    if (p->len > keep) {
        p->wire_bytes -= p->len - keep;
        p->len = keep;
    }
    p->trimmed = 1;
}

static void pool_put(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p)
{
    assert(p->live); /* a packet ends its life once */
    p->live = 0;
    pool->c.in_flight--;
    pool_rezero(pool, p, p->written);
    struct pool_class *cl = &pool->cls[p->big];
    p->next = cl->free;
    cl->free = p;
}

void mroce_sim_pkt_export(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p)
{
    pool->c.exported++;
    pool_put(pool, p);
}

struct mroce_sim_pkt *mroce_sim_pkt_import(struct mroce_sim_pool *pool,
                                           uint32_t len)
{
    int big = len > pool->cls[0].cap;
    if (len > pool->cls[big].cap)
        return NULL;
    struct mroce_sim_pkt *p = pool_get(pool, big);
    if (!p)
        return NULL;
    p->live = 1;
    p->written = len; /* the caller copies len bytes in */
    pool->c.imported++;
    if (++pool->c.in_flight > pool->c.peak_in_flight)
        pool->c.peak_in_flight = pool->c.in_flight;
    return p;
}

void mroce_sim_pkt_deliver(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p)
{
    pool->c.delivered++;
    pool_put(pool, p);
}

void mroce_sim_pkt_drop(struct mroce_sim_pool *pool, struct mroce_sim_pkt *p,
                        int reason)
{
    assert(reason >= 0 && reason < MROCE_SIM_DROP_N);
    pool->c.dropped[reason]++;
    pool->c.dropped_total++;
    pool_put(pool, p);
}

void mroce_sim_pool_get_counters(const struct mroce_sim_pool *pool,
                                 struct mroce_sim_pool_counters *out)
{
    *out = pool->c;
}

void mroce_sim_pool_load_counters(struct mroce_sim_pool *pool,
                                  const struct mroce_sim_pool_counters *c)
{
    pool->c = *c;
}

/* Also walks the free lists: a packet freed twice or never would make
 * their length disagree with the live count (plus the buffers taken by
 * endpoints to write into, one per host at most). */
bool mroce_sim_pool_conserved(const struct mroce_sim_pool *pool)
{
    const struct mroce_sim_pool_counters *c = &pool->c;
    uint64_t dropped = 0, free_n = 0;
    for (int i = 0; i < MROCE_SIM_DROP_N; i++)
        dropped += c->dropped[i];
    for (int k = 0; k < 2; k++)
        for (const struct mroce_sim_pkt *p = pool->cls[k].free; p; p = p->next)
            free_n++;
    return dropped == c->dropped_total &&
           c->injected + c->imported ==
               c->delivered + dropped + c->exported + c->in_flight &&
           free_n + c->in_flight + pool->taken == c->allocated;
}
