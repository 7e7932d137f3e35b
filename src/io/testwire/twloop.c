/* The test-wire driver loop; see twloop.h for the model. */
#include "io/testwire/twloop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_crypto.h>

#define TWL_BURST 64
#define TWL_MAX_STALL 1000000u
#define TWL_CQ_RETRIES 8 /* doublings of a CQ a connection finds too small */

struct twl_ep {
    const struct mroce_ep_ops *ops;
    void *obj;
    int wire_ep;
    int mode;
    /* When a context cut short by its burst or by pacing may send again;
     * UINT64_MAX once mroce_ctx_tx said it has nothing. */
    uint64_t resume_at;
    /* next_expiry as twl_timers read it: the pass's time jump uses it
     * when no timer fired (nothing ran in between to move it). */
    uint64_t expiry;
};

struct mroce_twloop {
    struct mroce_tw *tw;
    struct twl_ep *eps;
    int n;
    struct mroce_twloop_cfg cfg;
    uint8_t *buf; /* one tx buffer: the wire copies on send */
    size_t cap;
    uint64_t stall; /* passes since now last advanced */
    mroce_twloop_tap tap;
    void *tap_ud;
    struct mroce_twloop_stats st;
};

/* ---- Creation ---- */

static void twl_cfg_defaults(struct mroce_twloop_cfg *c)
{
    if (c->burst == 0)
        c->burst = TWL_BURST;
    if (c->max_stall == 0)
        c->max_stall = TWL_MAX_STALL;
}

static bool twl_ops_ok(const struct mroce_ep_ops *o)
{
    return o && o->max_pkt && o->tx && o->rx && o->next_expiry && o->on_expiry;
}

static int twl_attach_all(struct mroce_twloop *l,
                          const struct mroce_ep_ops *const *ops,
                          void *const *eps, const struct mroce_addr *addrs)
{
    for (int i = 0; i < l->n; i++) {
        if (!twl_ops_ok(ops[i]) || !eps[i])
            return MROCE_EINVAL;
        int w = mroce_tw_attach(l->tw, &addrs[i]);
        if (w < 0) {
            l->st.last_wire_err = w;
            return MROCE_EINVAL;
        }
        struct twl_ep *e = &l->eps[i];
        e->ops = ops[i];
        e->obj = eps[i];
        e->wire_ep = w;
        e->mode = MROCE_TWLOOP_LIVE;
        e->resume_at = UINT64_MAX;
        size_t m = ops[i]->max_pkt(eps[i]);
        l->cap = m > l->cap ? m : l->cap;
    }
    return 0;
}

int mroce_twloop_create_ops(struct mroce_tw *tw,
                            const struct mroce_ep_ops *const *ops,
                            void *const *eps, const struct mroce_addr *addrs,
                            int n, const struct mroce_twloop_cfg *cfg,
                            struct mroce_twloop **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!tw || !ops || !eps || !addrs || n < 1)
        return MROCE_EINVAL;
    struct mroce_twloop *l = calloc(1, sizeof(*l));
    if (!l)
        return MROCE_ENOMEM;
    l->tw = tw;
    l->n = n;
    if (cfg)
        l->cfg = *cfg;
    twl_cfg_defaults(&l->cfg);
    l->st.now = l->cfg.start_ns;
    l->eps = calloc((size_t)n, sizeof(*l->eps));
    int rc = l->eps ? twl_attach_all(l, ops, eps, addrs) : MROCE_ENOMEM;
    if (rc == 0 && !(l->buf = malloc(l->cap ? l->cap : 1)))
        rc = MROCE_ENOMEM;
    if (rc < 0) {
        mroce_twloop_destroy(l);
        return rc;
    }
    *out = l;
    return 0;
}

int mroce_twloop_create(struct mroce_tw *tw, struct mroce_ctx *const *ctxs,
                        const struct mroce_addr *addrs, int n,
                        const struct mroce_twloop_cfg *cfg,
                        struct mroce_twloop **out)
{
    if (!ctxs || n < 1 || n > 4096) {
        if (out)
            *out = NULL;
        return MROCE_EINVAL;
    }
    const struct mroce_ep_ops **ops = malloc((size_t)n * sizeof(*ops));
    void **eps = malloc((size_t)n * sizeof(*eps));
    int rc = MROCE_ENOMEM;
    if (ops && eps) {
        for (int i = 0; i < n; i++) {
            ops[i] = &mroce_ep_ctx_ops;
            eps[i] = ctxs[i];
        }
        rc = mroce_twloop_create_ops(tw, ops, eps, addrs, n, cfg, out);
    } else if (out) {
        *out = NULL;
    }
    free(ops);
    free(eps);
    return rc;
}

void mroce_twloop_destroy(struct mroce_twloop *loop)
{
    if (!loop)
        return;
    free(loop->buf);
    free(loop->eps);
    free(loop);
}

uint64_t mroce_twloop_now(const struct mroce_twloop *loop)
{
    return loop->st.now;
}

int mroce_twloop_set_mode(struct mroce_twloop *loop, int ep, int mode)
{
    if (!loop || ep < 0 || ep >= loop->n || mode < MROCE_TWLOOP_LIVE ||
        mode > MROCE_TWLOOP_FROZEN)
        return MROCE_EINVAL;
    loop->eps[ep].mode = mode;
    loop->eps[ep].resume_at = UINT64_MAX;
    return 0;
}

void mroce_twloop_set_tap(struct mroce_twloop *loop, mroce_twloop_tap tap,
                          void *ud)
{
    loop->tap = tap;
    loop->tap_ud = ud;
}

void mroce_twloop_get_stats(const struct mroce_twloop *loop,
                            struct mroce_twloop_stats *out)
{
    *out = loop->st;
}

/* ---- One pass ---- */

static bool twl_runs(const struct twl_ep *e)
{
    return e->mode != MROCE_TWLOOP_FROZEN;
}

/* Sends up to a burst; notes in resume_at whether the endpoint was cut
 * short, so the time jump does not skip its remaining packets. */
static int twl_tx_ep(struct mroce_twloop *l, struct twl_ep *e)
{
    uint64_t now = l->st.now;
    e->resume_at = UINT64_MAX;
    for (uint32_t i = 0; i < l->cfg.burst; i++) {
        uint64_t free_at = mroce_tw_egress_free_at(l->tw, e->wire_ep);
        if (!l->cfg.no_pace && free_at > now) {
            e->resume_at = free_at;
            return 0;
        }
        struct mroce_pkt_meta meta;
        memset(&meta, 0, sizeof(meta));
        int len = e->ops->tx(e->obj, now, l->buf, l->cap, &meta);
        if (len == 0)
            return 0;
        if (len < 0) {
            l->st.last_tx_err = len;
            return len;
        }
        if (l->tap)
            l->tap(l->tap_ud, now, (int)(e - l->eps), &meta, l->buf,
                   (size_t)len);
        int rc = mroce_tw_send(l->tw, now, &meta, l->buf, (size_t)len);
        if (rc < 0) {
            l->st.last_wire_err = rc;
            return MROCE_EINVAL;
        }
        l->st.tx_pkts++;
    }
    e->resume_at = now;
    return 0;
}

static int twl_tx_all(struct mroce_twloop *l)
{
    for (int i = 0; i < l->n; i++) {
        if (!twl_runs(&l->eps[i]))
            continue;
        int rc = twl_tx_ep(l, &l->eps[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static struct twl_ep *twl_by_wire(struct mroce_twloop *l, int wire_ep)
{
    for (int i = 0; i < l->n; i++)
        if (l->eps[i].wire_ep == wire_ep)
            return &l->eps[i];
    return NULL;
}

/* Delivers everything due now. An engine's refusal (EPROTO) is normal on
 * a lossy wire (corruption) and only counted. */
static int twl_rx_all(struct mroce_twloop *l, bool *did)
{
    struct mroce_tw_pkt p;
    int rc;
    while ((rc = mroce_tw_pop(l->tw, l->st.now, &p)) == 1) {
        *did = true;
        struct twl_ep *e = twl_by_wire(l, p.dst_ep);
        if (!e || e->mode != MROCE_TWLOOP_LIVE) {
            l->st.discarded++;
            continue;
        }
        l->st.rx_pkts++;
        if (e->ops->rx(e->obj, l->st.now, &p.meta, p.buf, p.len) < 0)
            l->st.rx_rejected++;
    }
    if (rc < 0) {
        l->st.last_wire_err = rc;
        return MROCE_EINVAL;
    }
    return 0;
}

static void twl_timers(struct mroce_twloop *l, bool *did)
{
    for (int i = 0; i < l->n; i++) {
        struct twl_ep *e = &l->eps[i];
        if (!twl_runs(e))
            continue;
        e->expiry = e->ops->next_expiry(e->obj);
        if (e->expiry > l->st.now)
            continue;
        e->ops->on_expiry(e->obj, l->st.now);
        l->st.expiries++;
        *did = true;
    }
}

/* Called only after a pass in which no timer fired and nothing was
 * received: every endpoint's expiry is still the one twl_timers read. */
static uint64_t twl_next_event(const struct mroce_twloop *l)
{
    uint64_t t = mroce_tw_next_time(l->tw);
    for (int i = 0; i < l->n; i++) {
        const struct twl_ep *e = &l->eps[i];
        if (!twl_runs(e))
            continue;
        uint64_t x = e->expiry;
        t = x < t ? x : t;
        t = e->resume_at < t ? e->resume_at : t;
    }
    return t;
}

static int twl_stay(struct mroce_twloop *l)
{
    if (++l->stall > l->cfg.max_stall)
        return MROCE_EBUSY;
    return 0;
}

int mroce_twloop_step(struct mroce_twloop *loop, uint64_t limit_ns)
{
    if (!loop)
        return MROCE_EINVAL;
    bool did = false;
    int rc = twl_tx_all(loop);
    if (rc == 0)
        rc = twl_rx_all(loop, &did);
    if (rc < 0)
        return rc;
    twl_timers(loop, &did);
    loop->st.passes++;
    /* Received packets and timers may have queued new packets (ACKs,
     * retransmissions) that must leave at this instant. */
    uint64_t next = did ? loop->st.now : twl_next_event(loop);
    if (next > limit_ns)
        next = limit_ns;
    if (next <= loop->st.now)
        return next == limit_ns && !did ? 0 : twl_stay(loop);
    loop->st.now = next;
    loop->stall = 0;
    return 1;
}

int mroce_twloop_run_until(struct mroce_twloop *loop, mroce_twloop_pred pred,
                           void *arg, uint64_t deadline_ns)
{
    if (!loop)
        return MROCE_EINVAL;
    for (;;) {
        if (pred && pred(loop, arg))
            return MROCE_TWLOOP_DONE;
        if (loop->st.now >= deadline_ns)
            return MROCE_TWLOOP_TIMEOUT;
        int rc = mroce_twloop_step(loop, deadline_ns);
        if (rc < 0)
            return rc;
    }
}

/* ---- Two connected endpoints ---- */

static int twl_wire_err(int e)
{
    return e == -ENOMEM ? MROCE_ENOMEM : MROCE_EINVAL;
}

static uint32_t twl_or(uint32_t v, uint32_t dflt)
{
    return v ? v : dflt;
}

/* Room for every WR the connection can have outstanding, send and
 * receive, since one CQ serves both. */
static uint32_t twl_cq_depth(const struct mroce_conn_attr *a)
{
    uint32_t streams = twl_or(a->n_streams, 1);
    uint32_t per = twl_or(a->sq_depth, 64) + twl_or(a->rq_depth, 64);
    return streams * per;
}

static int twl_open_ctx(struct mroce_twloop_pair *p,
                        const struct mroce_twloop_pair_cfg *cfg, int i)
{
    struct mroce_ctx_attr a = cfg->ctx[i];
    if (a.addr.family == MROCE_AF_NONE) {
        a.addr.family = MROCE_AF_INET;
        a.addr.ip[0] = 10;
        a.addr.ip[3] = (uint8_t)(i + 1);
    }
    /* The test wire repeats runs exactly (R-SEC-7: deterministic contexts
     * are for tests and benchmarks only), with distinct default seeds:
     * the two sides must not draw the same ids. */
    a.deterministic = 1;
    if (a.seed == 0)
        a.seed = (cfg->wire.seed + 1) * 0x9e3779b97f4a7c15ull + (uint64_t)i;
    p->addr[i] = a.addr;
    if (cfg->sec_mode != MROCE_SEC_NONE && !a.crypto)
        a.crypto = mroce_crypto_default();
    int rc = mroce_ctx_open(&a, &p->ctx[i]);
    return rc < 0 ? rc : mroce_pd_alloc(p->ctx[i], &p->pd[i]);
}

/* Creates the CQ and the connection, growing the CQ while the connection
 * says it is too small (EAGAIN). */
static int twl_open_conn(struct mroce_twloop_pair *p,
                         const struct mroce_twloop_pair_cfg *cfg, int i)
{
    struct mroce_conn_attr a = cfg->conn[i];
    uint32_t depth = twl_or(cfg->cq_depth, twl_cq_depth(&a));
    int rc = MROCE_EAGAIN;
    for (int t = 0; t < TWL_CQ_RETRIES && rc == MROCE_EAGAIN; t++) {
        if (p->cq[i]) {
            mroce_cq_destroy(p->cq[i]);
            p->cq[i] = NULL;
        }
        rc = mroce_cq_create(p->ctx[i], depth, &p->cq[i]);
        if (rc < 0)
            return rc;
        a.send_cq = p->cq[i];
        a.recv_cq = p->cq[i];
        rc = mroce_conn_create(p->pd[i], &a, &p->conn[i]);
        depth *= 2;
    }
    return rc;
}

static int twl_make_wire(struct mroce_twloop_pair *p,
                         const struct mroce_twloop_pair_cfg *cfg)
{
    struct mroce_tw_cfg w = cfg->wire;
    if (w.max_pkt == 0) {
        size_t a = mroce_ctx_max_pkt(p->ctx[0]);
        size_t b = mroce_ctx_max_pkt(p->ctx[1]);
        w.max_pkt = (uint32_t)(a > b ? a : b);
    }
    int rc = mroce_tw_create(&w, &p->tw);
    if (rc < 0)
        return twl_wire_err(rc);
    const struct mroce_ep_ops *o = cfg->ops ? cfg->ops : &mroce_ep_ctx_ops;
    const struct mroce_ep_ops *ops[2] = {o, o};
    void *eps[2] = {p->ctx[0], p->ctx[1]};
    return mroce_twloop_create_ops(p->tw, ops, eps, p->addr, 2, &cfg->loop,
                                   &p->loop);
}

static int twl_connect(struct mroce_twloop_pair *p,
                       const struct mroce_twloop_pair_cfg *cfg)
{
    struct mroce_conn_params par[2];
    for (int i = 0; i < 2 && cfg->sec_mode != MROCE_SEC_NONE; i++) {
        int rc = mroce_conn_set_secret(p->conn[i], cfg->sec_mode, cfg->secret,
                                       sizeof(cfg->secret));
        if (rc < 0)
            return rc;
    }
    mroce_conn_get_params(p->conn[0], &par[0]);
    mroce_conn_get_params(p->conn[1], &par[1]);
    int rc = mroce_conn_connect(p->conn[0], &par[1]);
    return rc < 0 ? rc : mroce_conn_connect(p->conn[1], &par[0]);
}

static int twl_pair_setup(struct mroce_twloop_pair *p,
                          const struct mroce_twloop_pair_cfg *cfg)
{
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = twl_open_ctx(p, cfg, i);
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = twl_open_conn(p, cfg, i);
    if (rc == 0)
        rc = twl_make_wire(p, cfg);
    return rc < 0 ? rc : twl_connect(p, cfg);
}

int mroce_twloop_pair_create(const struct mroce_twloop_pair_cfg *cfg,
                             struct mroce_twloop_pair **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!cfg)
        return MROCE_EINVAL;
    struct mroce_twloop_pair *p = calloc(1, sizeof(*p));
    if (!p)
        return MROCE_ENOMEM;
    int rc = twl_pair_setup(p, cfg);
    if (rc < 0) {
        mroce_twloop_pair_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* mroce_ctx_close frees what was made from the context (PD, CQ, MRs);
 * connections go first so nothing is still using them. */
void mroce_twloop_pair_destroy(struct mroce_twloop_pair *pair)
{
    if (!pair)
        return;
    mroce_twloop_destroy(pair->loop);
    mroce_tw_destroy(pair->tw);
    for (int i = 0; i < 2; i++) {
        if (pair->conn[i])
            mroce_conn_destroy(pair->conn[i]);
        if (pair->ctx[i])
            mroce_ctx_close(pair->ctx[i]);
    }
    free(pair);
}
