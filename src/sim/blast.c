/* A synthetic endpoint; see blast.h. */
#include "sim/blast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BLAST_MAGIC 0x424c5354u /* "BLST" */

struct blast_flow {
    struct mroce_sim_blast_flow f;
    uint32_t n_pkts;
    uint32_t sent;
};

struct mroce_sim_blast {
    struct mroce_addr addr;
    uint32_t max_pkt;
    struct blast_flow *flows;
    uint32_t n, cap;
    uint32_t cursor; /* round-robin position */
    uint32_t unfinished;
    uint32_t unstarted; /* flows with nothing sent yet */
    uint64_t now_seen;  /* latest time the host gave us */
    mroce_sim_blast_rx_fn rx_fn;
    void *rx_ud;
    struct mroce_sim_blast_counters c;
};

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

struct mroce_sim_blast *mroce_sim_blast_create(const struct mroce_addr *addr,
                                               uint32_t max_pkt)
{
    if (!addr || max_pkt < MROCE_SIM_BLAST_HDR)
        return NULL;
    struct mroce_sim_blast *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->addr = *addr;
    b->max_pkt = max_pkt;
    b->c.first_rx_ns = UINT64_MAX;
    return b;
}

void mroce_sim_blast_destroy(struct mroce_sim_blast *b)
{
    if (!b)
        return;
    free(b->flows);
    free(b);
}

int mroce_sim_blast_add_flow(struct mroce_sim_blast *b,
                             const struct mroce_sim_blast_flow *f)
{
    uint32_t pb = f->pkt_bytes ? f->pkt_bytes : b->max_pkt;
    if (f->bytes == 0 || pb < MROCE_SIM_BLAST_HDR || pb > b->max_pkt ||
        (f->bytes + pb - 1) / pb > UINT32_MAX || b->n == INT32_MAX)
        return MROCE_EINVAL;
    if (b->n == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 16;
        struct blast_flow *nf = realloc(b->flows, cap * sizeof(*nf));
        if (!nf)
            return MROCE_ENOMEM;
        b->flows = nf;
        b->cap = cap;
    }
    struct blast_flow *bf = &b->flows[b->n];
    bf->f = *f;
    bf->f.pkt_bytes = pb;
    if (bf->f.dst_port == 0)
        bf->f.dst_port = MROCE_UDP_PORT;
    bf->n_pkts = (uint32_t)((f->bytes + pb - 1) / pb);
    bf->sent = 0;
    b->unfinished++;
    b->unstarted++;
    return (int)b->n++;
}

void mroce_sim_blast_set_rx_hook(struct mroce_sim_blast *b,
                                 mroce_sim_blast_rx_fn fn, void *ud)
{
    b->rx_fn = fn;
    b->rx_ud = ud;
}

void mroce_sim_blast_get_counters(const struct mroce_sim_blast *b,
                                  struct mroce_sim_blast_counters *out)
{
    *out = b->c;
}

/* ---- Ops ---- */

static size_t blast_max_pkt(const void *ep)
{
    return ((const struct mroce_sim_blast *)ep)->max_pkt;
}

static bool blast_ready(const struct blast_flow *bf, uint64_t now)
{
    return bf->sent < bf->n_pkts && bf->f.start_ns <= now;
}

/* The next ready flow after the cursor, or NULL. */
static struct blast_flow *blast_next(struct mroce_sim_blast *b, uint64_t now)
{
    for (uint32_t i = 0; i < b->n && b->unfinished; i++) {
        uint32_t k = (b->cursor + i) % b->n;
        if (blast_ready(&b->flows[k], now)) {
            b->cursor = (k + 1) % b->n;
            return &b->flows[k];
        }
    }
    return NULL;
}

static uint32_t blast_len(const struct blast_flow *bf)
{
    uint64_t off = (uint64_t)bf->sent * bf->f.pkt_bytes;
    uint64_t left = bf->f.bytes - off;
    return left < bf->f.pkt_bytes ? (uint32_t)left : bf->f.pkt_bytes;
}

static int blast_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                    struct mroce_pkt_meta *meta)
{
    struct mroce_sim_blast *b = ep;
    if (now > b->now_seen)
        b->now_seen = now;
    struct blast_flow *bf = blast_next(b, now);
    if (!bf)
        return 0;
    uint32_t len = blast_len(bf);
    if (len < MROCE_SIM_BLAST_HDR) /* a short tail still carries a header */
        len = MROCE_SIM_BLAST_HDR;
    if (cap < len)
        return MROCE_ENOBUFS;
    b->unstarted -= bf->sent == 0;
    put32(buf, BLAST_MAGIC);
    put32(buf + 4, (uint32_t)(bf - b->flows));
    put32(buf + 8, bf->sent);
    put32(buf + 12, bf->n_pkts);
    memset(buf + MROCE_SIM_BLAST_HDR, 0xa5, len - MROCE_SIM_BLAST_HDR);
    meta->src = b->addr;
    meta->dst = bf->f.dst;
    meta->src_port = bf->f.src_port;
    meta->dst_port = bf->f.dst_port;
    meta->ecn = bf->f.ecn;
    if (++bf->sent == bf->n_pkts) {
        b->unfinished--;
        b->c.flows_done_tx++;
    }
    b->c.tx_pkts++;
    b->c.tx_bytes += len;
    b->c.last_tx_ns = now;
    return (int)len;
}

static int blast_rx(void *ep, uint64_t now, const struct mroce_pkt_meta *meta,
                    const uint8_t *buf, size_t len)
{
    struct mroce_sim_blast *b = ep;
    if (len < MROCE_SIM_BLAST_HDR || get32(buf) != BLAST_MAGIC) {
        b->c.rx_bad++;
        return MROCE_EPROTO;
    }
    b->c.rx_pkts++;
    b->c.rx_bytes += len;
    b->c.rx_ce += meta->ecn == MROCE_ECN_CE;
    if (b->c.first_rx_ns == UINT64_MAX)
        b->c.first_rx_ns = now;
    b->c.last_rx_ns = now;
    if (b->rx_fn)
        b->rx_fn(b->rx_ud, now, meta, get32(buf + 4), get32(buf + 8),
                 get32(buf + 12));
    return 0;
}

/* The earliest start still in the future: the host's timer then pulls
 * that flow. Flows already due wait for the NIC's room callback, which
 * keeps a busy NIC from turning the timer into a per-nanosecond poll. */
static uint64_t blast_next_expiry(const void *ep)
{
    const struct mroce_sim_blast *b = ep;
    uint64_t t = UINT64_MAX;
    if (b->unstarted == 0)
        return t;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct blast_flow *bf = &b->flows[i];
        if (bf->sent == 0 && bf->f.start_ns > b->now_seen && bf->f.start_ns < t)
            t = bf->f.start_ns;
    }
    return t;
}

/* Only notes the time: the host pulls right after. */
static void blast_on_expiry(void *ep, uint64_t now)
{
    struct mroce_sim_blast *b = ep;
    if (now > b->now_seen)
        b->now_seen = now;
}

const struct mroce_ep_ops mroce_sim_blast_ops = {
    .max_pkt = blast_max_pkt,
    .tx = blast_tx,
    .rx = blast_rx,
    .next_expiry = blast_next_expiry,
    .on_expiry = blast_on_expiry,
};
