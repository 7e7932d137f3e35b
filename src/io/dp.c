/* The common datapath loop: drives one engine (struct mroce_ctx) over a
 * datapath's ops table (dp.h), with pacing, impairment, timers and an
 * optional polling thread. See mroce_dp.h for the model and
 * docs/datapath.md for the details.
 *
 * One pass (mroce_progress):
 *   1. receive one burst and feed every packet to mroce_ctx_rx;
 *   2. run the engine's timers if due;
 *   3. send the impairment queue's due packets, then one burst of what
 *      the engine has, within the pacing budget.
 * Locking: mu is held by the polling thread around each pass and by the
 * application between mroce_dp_lock and mroce_dp_unlock. */
#define _GNU_SOURCE
#include "io/dp.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce_crypto.h>

#include "io/impair.h"

#define DP_DEF_SRC_PORTS 64
#define DP_DEF_BATCH 256 /* GSO needs a path's packets in one burst */
#define DP_MAX_BATCH 1024
#define DP_TX_CHUNK 32 /* transmit buffers allocated at a time */
#define DP_IMPAIR_SLOTS 1024
#define DP_IDLE_SPINS 64            /* idle passes before the thread sleeps */
#define DP_MAX_SLEEP_NS 10000000ull /* a sleeping thread looks every 10 ms */
#define DP_PACE_DEPTH_PKTS 16       /* token bucket depth */
#define DP_UDP_IP_OVERHEAD 28       /* UDP + IPv4 header, for pacing */

struct dp_loop {
    struct mroce_dp_pkt *rx, *tx;
    size_t max_pkt;
    struct mroce_impair_q *imp;
    /* pacing: a token bucket of IP bytes, refilled at pace_bps / 8 */
    double tokens, depth;
    uint64_t refilled_at;
    uint64_t pace_until; /* when the bucket is positive again; 0: now */
    /* the polling thread */
    pthread_mutex_t mu;
    pthread_t th;
    bool running;
    atomic_bool stop, sleeping, kick;
};

uint64_t mroce_dp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- creation ---- */

static const struct mroce_dp_ops *dp_ops_of(int kind)
{
    if (kind == MROCE_DP_UDP)
        return &mroce_dp_udp_ops;
#ifdef MROCE_HAVE_DPDK
    if (kind == MROCE_DP_DPDK)
        return &mroce_dp_dpdk_ops;
#endif
    return NULL;
}

int mroce_addr_parse(const char *s, struct mroce_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (s && inet_pton(AF_INET, s, out->ip) == 1)
        out->family = MROCE_AF_INET;
    else if (s && inet_pton(AF_INET6, s, out->ip) == 1)
        out->family = MROCE_AF_INET6;
    else
        return MROCE_EINVAL;
    return 0;
}

static int dp_resolve(struct mroce_dp *dp, const struct mroce_dp_attr *a)
{
    dp->attr = *a;
    struct mroce_dp_attr *r = &dp->attr;
    if (r->port == 0)
        r->port = MROCE_UDP_PORT;
    if (r->n_src_ports == 0)
        r->n_src_ports = DP_DEF_SRC_PORTS;
    if (r->batch == 0)
        r->batch = DP_DEF_BATCH;
    if (r->n_src_ports > MROCE_MAX_SRC_PORTS || r->batch > DP_MAX_BATCH)
        return MROCE_EINVAL;
    /* The RoCEv2 baseline sends from per-QP ports to UDP 4791, which a
     * datapath's sockets neither own nor bind: simulator only. */
    if (r->ctx.transport != MROCE_TRANSPORT_METAROCE)
        return MROCE_EINVAL;
    dp->ctx_attr = r->ctx;
    if (r->local_ip && mroce_addr_parse(r->local_ip, &dp->ctx_attr.addr))
        return MROCE_EINVAL;
    /* R-SEC-7: ids, keys and initial sequence numbers come from the
     * context's default, the kernel's CSPRNG, unless the caller asked for
     * a deterministic context (tests) */
    /* the secure modes (R-AEAD-12): the best crypto backend here */
    if (!dp->ctx_attr.crypto)
        dp->ctx_attr.crypto = mroce_crypto_default();
    return 0;
}

static int dp_loop_new(struct mroce_dp *dp)
{
    struct dp_loop *l = calloc(1, sizeof(*l));
    if (!l)
        return MROCE_ENOMEM;
    dp->loop = l;
    pthread_mutex_init(&l->mu, NULL);
    l->rx = calloc(dp->attr.batch, sizeof(*l->rx));
    l->tx = calloc(dp->attr.batch, sizeof(*l->tx));
    return l->rx && l->tx ? 0 : MROCE_ENOMEM;
}

static void dp_pace_init(struct mroce_dp *dp)
{
    struct dp_loop *l = dp->loop;
    /* a GSO message's worth of full packets may leave back to back */
    l->depth = DP_PACE_DEPTH_PKTS * (double)(l->max_pkt + 48);
    l->tokens = l->depth;
    l->refilled_at = mroce_dp_now_ns();
}

static int dp_engine_open(struct mroce_dp *dp)
{
    struct dp_loop *l = dp->loop;
    int rc = mroce_ctx_open(&dp->ctx_attr, &dp->ctx);
    if (rc < 0)
        return rc;
    l->max_pkt = mroce_ctx_max_pkt(dp->ctx);
    dp_pace_init(dp);
    if (!mroce_impair_active(&dp->attr.impair))
        return 0;
    return mroce_impair_new(&dp->attr.impair, DP_IMPAIR_SLOTS,
                            (uint32_t)l->max_pkt, &l->imp);
}

int mroce_dp_create(const struct mroce_dp_attr *attr, struct mroce_dp **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!attr)
        return MROCE_EINVAL;
    const struct mroce_dp_ops *ops = dp_ops_of(attr->kind);
    if (!ops)
        return attr->kind == MROCE_DP_DPDK ? MROCE_ESTATE : MROCE_EINVAL;
    struct mroce_dp *dp = calloc(1, sizeof(*dp));
    if (!dp)
        return MROCE_ENOMEM;
    dp->ops = ops;
    int rc = dp_resolve(dp, attr);
    if (rc == 0)
        rc = dp_loop_new(dp);
    if (rc == 0 && (rc = ops->open(dp)) < 0)
        dp->ops = NULL; /* open cleaned up after itself */
    if (rc == 0)
        rc = dp_engine_open(dp);
    if (rc < 0) {
        mroce_dp_destroy(dp);
        return rc;
    }
    *out = dp;
    return 0;
}

void mroce_dp_destroy(struct mroce_dp *dp)
{
    if (!dp)
        return;
    struct dp_loop *l = dp->loop;
    if (l && l->running)
        mroce_dp_thread_stop(dp);
    if (dp->ctx)
        mroce_ctx_close(dp->ctx);
    if (dp->ops)
        dp->ops->close(dp);
    if (l) {
        mroce_impair_free(l->imp);
        pthread_mutex_destroy(&l->mu);
        free(l->rx);
        free(l->tx);
        free(l);
    }
    free(dp);
}

struct mroce_ctx *mroce_dp_ctx(struct mroce_dp *dp)
{
    return dp->ctx;
}

/* ---- receive ---- */

static int dp_rx(struct mroce_dp *dp, uint64_t now)
{
    struct dp_loop *l = dp->loop;
    int n = dp->ops->rx_burst(dp, l->rx, (int)dp->attr.batch);
    if (n <= 0)
        return n;
    dp->cnt.rx_bursts++;
    for (int i = 0; i < n; i++) {
        const struct mroce_dp_pkt *p = &l->rx[i];
        dp->cnt.rx_pkts++;
        dp->cnt.rx_bytes += p->len;
        dp->cnt.rx_ce += p->meta.ecn == MROCE_ECN_CE;
        /* a refusal (EPROTO) is counted by the engine by reason */
        mroce_ctx_rx(dp->ctx, now, &p->meta, p->buf, p->len);
    }
    dp->ops->rx_release(dp, l->rx, n);
    return n;
}

/* ---- pacing ---- */

static bool dp_pace_ok(struct mroce_dp *dp, uint64_t now)
{
    struct dp_loop *l = dp->loop;
    if (!dp->attr.pace_bps)
        return true;
    double rate = (double)dp->attr.pace_bps / 8e9; /* bytes per ns */
    l->tokens += (double)(now - l->refilled_at) * rate;
    l->refilled_at = now;
    if (l->tokens > l->depth)
        l->tokens = l->depth;
    if (l->tokens > 0) {
        l->pace_until = 0;
        return true;
    }
    l->pace_until = now + (uint64_t)(-l->tokens / rate) + 1;
    dp->cnt.pace_waits++;
    return false;
}

static void dp_pace_charge(struct mroce_dp *dp, int len)
{
    if (dp->attr.pace_bps)
        dp->loop->tokens -= (double)(len + DP_UDP_IP_OVERHEAD);
}

/* ---- transmit ---- */

/* Hands pkts[0..n) to the datapath; `more`: the loop sends again in its
 * next pass, so the datapath may hold a short GSO tail until then (dp.h).
 * With nothing to send it still flushes what the datapath holds. */
static int dp_send(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n,
                   bool more)
{
    if (n == 0 && dp->tx_held == 0)
        return 0;
    for (int i = 0; i < n; i++)
        dp->cnt.tx_bytes += pkts[i].len;
    dp->cnt.tx_pkts += (uint64_t)n;
    dp->cnt.tx_bursts += n > 0;
    dp->tx_more = more;
    dp->ops->tx_burst(dp, pkts, n); /* refusals: counted in tx_dropped */
    dp->tx_more = false;
    return n;
}

/* Packets the impairment queue has due now. */
static int dp_tx_impaired(struct mroce_dp *dp, uint64_t now)
{
    struct dp_loop *l = dp->loop;
    if (!l->imp || mroce_impair_next_due(l->imp) > now)
        return 0;
    int n = dp->ops->tx_alloc(dp, l->tx, (int)dp->attr.batch, l->max_pkt);
    int k = 0;
    while (k < n) {
        struct mroce_dp_pkt *p = &l->tx[k];
        int len = mroce_impair_pop(l->imp, now, p->buf, p->cap, &p->meta);
        if (len <= 0)
            break;
        p->len = (uint32_t)len;
        p->pay_len = 0;
        k++;
    }
    if (n > k)
        dp->ops->tx_free(dp, l->tx + k, n - k);
    return n < 0 ? n : dp_send(dp, l->tx, k, false);
}

/* The impairment layer's verdict; true if the packet is to go now. It
 * copies packets it holds or duplicates, so a referenced payload is
 * copied into buf first (test-only: impairment is off by default). */
static bool dp_impair(struct mroce_dp *dp, uint64_t now, struct mroce_dp_pkt *p)
{
    struct dp_loop *l = dp->loop;
    if (!l->imp)
        return true;
    mroce_dp_pkt_flatten(p);
    struct mroce_impair_stats a, b;
    mroce_impair_get_stats(l->imp, &a);
    int fate = mroce_impair_apply(l->imp, now, p->buf, p->len, &p->meta);
    mroce_impair_get_stats(l->imp, &b);
    dp->cnt.imp_lost += b.lost - a.lost;
    dp->cnt.imp_dup += b.dup - a.dup;
    dp->cnt.imp_reordered += b.reordered - a.reordered;
    dp->cnt.imp_delayed += b.delayed - a.delayed;
    return fate == MROCE_IMPAIR_PASS;
}

/* Makes sure l->tx[k] has a buffer: *have buffers are allocated, more
 * come DP_TX_CHUNK at a time, so a pass with little to send allocates
 * (and frees) a few buffers, not a whole burst. 1: none left. */
static int dp_tx_buf(struct mroce_dp *dp, int k, int *have)
{
    struct dp_loop *l = dp->loop;
    if (k < *have)
        return 0;
    int want = (int)dp->attr.batch - *have;
    want = want < DP_TX_CHUNK ? want : DP_TX_CHUNK;
    int n = dp->ops->tx_alloc(dp, l->tx + *have, want, l->max_pkt);
    if (n > 0)
        *have += n;
    return n > 0 ? 0 : n < 0 ? n : 1;
}

/* The engine's next packet into p: by reference if the datapath takes
 * references (dp.h), the ICRC then written behind the hole in buf. */
static int dp_engine_tx(struct mroce_dp *dp, uint64_t now,
                        struct mroce_dp_pkt *p)
{
    p->pay_len = 0;
    if (!dp->ops->tx_ref)
        return mroce_ctx_tx(dp->ctx, now, p->buf, p->cap, &p->meta);
    struct mroce_tx_ref ref;
    int len = mroce_ctx_tx_ref(dp->ctx, now, p->buf, p->cap, &p->meta, &ref);
    if (len <= 0 || !ref.payload_len)
        return len;
    p->pay = ref.payload;
    p->pay_len = ref.payload_len;
    p->hdr_len = ref.hdr_len;
    memcpy(p->buf + ref.hdr_len + ref.payload_len, ref.trailer,
           ref.trailer_len);
    return len;
}

/* Fills a burst of up to batch packets from the engine. A packet the
 * impairment layer drops or holds frees its buffer for the next one.
 * *err: a negative engine or allocation result that ended the burst. */
static int dp_fill(struct mroce_dp *dp, uint64_t now, int *err)
{
    struct dp_loop *l = dp->loop;
    int k = 0, have = 0;
    while (k < (int)dp->attr.batch && dp_pace_ok(dp, now)) {
        int rc = dp_tx_buf(dp, k, &have);
        if (rc) {
            *err = rc < 0 ? rc : 0;
            break;
        }
        struct mroce_dp_pkt *p = &l->tx[k];
        int len = dp_engine_tx(dp, now, p);
        if (len <= 0) {
            *err = len;
            break;
        }
        p->len = (uint32_t)len;
        dp_pace_charge(dp, len);
        if (dp_impair(dp, now, p))
            k++;
    }
    if (have > k)
        dp->ops->tx_free(dp, l->tx + k, have - k);
    return k;
}

static int dp_tx(struct mroce_dp *dp, uint64_t now)
{
    struct dp_loop *l = dp->loop;
    int moved = dp_tx_impaired(dp, now);
    if (moved < 0)
        return moved;
    int err = 0;
    int k = dp_fill(dp, now, &err);
    /* a full burst: the engine may have more, and this pass returns > 0 */
    dp_send(dp, l->tx, k, k == (int)dp->attr.batch);
    return err < 0 ? err : moved + k;
}

/* ---- one pass ---- */

int mroce_progress_rx(struct mroce_dp *dp)
{
    if (!dp)
        return MROCE_EINVAL;
    uint64_t now = mroce_dp_now_ns();
    int rx = dp_rx(dp, now);
    if (rx >= 0 && mroce_ctx_next_expiry(dp->ctx) <= now)
        mroce_ctx_on_expiry(dp->ctx, now);
    return rx;
}

int mroce_progress_tx(struct mroce_dp *dp)
{
    if (!dp)
        return MROCE_EINVAL;
    return dp_tx(dp, mroce_dp_now_ns());
}

int mroce_progress(struct mroce_dp *dp)
{
    if (!dp)
        return MROCE_EINVAL;
    uint64_t now = mroce_dp_now_ns();
    int rx = dp_rx(dp, now);
    if (rx < 0)
        return rx;
    if (mroce_ctx_next_expiry(dp->ctx) <= now)
        mroce_ctx_on_expiry(dp->ctx, now);
    int tx = dp_tx(dp, now);
    return tx < 0 ? tx : rx + tx;
}

/* How long a wait may sleep: until the engine's next timer, the next
 * impaired packet, the pacing budget, or timeout_ns, whichever first. */
static uint64_t dp_sleep_ns(struct mroce_dp *dp, uint64_t timeout_ns)
{
    struct dp_loop *l = dp->loop;
    uint64_t t = mroce_ctx_next_expiry(dp->ctx);
    if (l->imp && mroce_impair_next_due(l->imp) < t)
        t = mroce_impair_next_due(l->imp);
    if (l->pace_until && l->pace_until < t)
        t = l->pace_until;
    uint64_t now = mroce_dp_now_ns();
    if (t <= now)
        return 0;
    return t - now < timeout_ns ? t - now : timeout_ns;
}

int mroce_dp_wait(struct mroce_dp *dp, uint64_t timeout_ns)
{
    if (!dp)
        return MROCE_EINVAL;
    uint64_t ns = dp->tx_held ? 0 : dp_sleep_ns(dp, timeout_ns);
    if (ns == 0 || !dp->ops->wait)
        return 0;
    return dp->ops->wait(dp, ns);
}

int mroce_dp_wake(struct mroce_dp *dp)
{
    if (!dp)
        return MROCE_EINVAL;
    return dp->ops->wake ? dp->ops->wake(dp) : 0;
}

/* ---- the polling thread ---- */

/* Sleeps unless the application posted since the last pass (kick);
 * mroce_dp_unlock wakes a sleeper through ops->wake. */
static void dp_thread_sleep(struct mroce_dp *dp, uint64_t ns)
{
    struct dp_loop *l = dp->loop;
    if (!dp->ops->wait || ns == 0)
        return;
    atomic_store(&l->sleeping, true);
    if (!atomic_exchange(&l->kick, false) && !atomic_load(&l->stop))
        dp->ops->wait(dp, ns);
    atomic_store(&l->sleeping, false);
}

static void *dp_thread_main(void *arg)
{
    struct mroce_dp *dp = arg;
    struct dp_loop *l = dp->loop;
    unsigned idle = 0;
    while (!atomic_load(&l->stop)) {
        pthread_mutex_lock(&l->mu);
        int n = mroce_progress(dp);
        uint64_t ns = n == 0 ? dp_sleep_ns(dp, DP_MAX_SLEEP_NS) : 0;
        pthread_mutex_unlock(&l->mu);
        if (n > 0) {
            idle = 0;
            continue;
        }
        if (++idle >= DP_IDLE_SPINS)
            dp_thread_sleep(dp, ns);
    }
    return NULL;
}

int mroce_dp_thread_start(struct mroce_dp *dp)
{
    if (!dp)
        return MROCE_EINVAL;
    struct dp_loop *l = dp->loop;
    if (l->running)
        return MROCE_ESTATE;
    atomic_store(&l->stop, false);
    if (pthread_create(&l->th, NULL, dp_thread_main, dp) != 0)
        return MROCE_ENOMEM;
    l->running = true;
    return 0;
}

void mroce_dp_thread_stop(struct mroce_dp *dp)
{
    struct dp_loop *l = dp ? dp->loop : NULL;
    if (!l || !l->running)
        return;
    atomic_store(&l->stop, true);
    if (dp->ops->wake)
        dp->ops->wake(dp);
    pthread_join(l->th, NULL);
    l->running = false;
}

void mroce_dp_lock(struct mroce_dp *dp)
{
    pthread_mutex_lock(&dp->loop->mu);
}

/* The application may have posted work: make a sleeping thread look. */
void mroce_dp_unlock(struct mroce_dp *dp)
{
    struct dp_loop *l = dp->loop;
    pthread_mutex_unlock(&l->mu);
    if (!l->running)
        return;
    atomic_store(&l->kick, true);
    if (atomic_load(&l->sleeping) && dp->ops->wake)
        dp->ops->wake(dp);
}

void mroce_dp_get_counters(const struct mroce_dp *dp,
                           struct mroce_dp_counters *out)
{
    *out = dp->cnt;
}
