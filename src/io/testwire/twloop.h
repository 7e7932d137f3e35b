/* The test-wire driver loop: runs several sans-I/O engines (struct
 * mroce_ctx) over one test wire (struct mroce_tw) in virtual time.
 *
 * One step (a "pass") at the current virtual time `now`:
 *   1. transmit: every live context's mroce_ctx_tx output goes into the
 *      wire, at most `burst` packets per context per pass; unless
 *      no_pace is set, a context sends only while its egress on the wire
 *      is idle, like a NIC that hands the next frame to the MAC when the
 *      previous one has left (so the engine's timestamps are send times);
 *   2. receive: every packet the wire has due at `now` goes to
 *      mroce_ctx_rx of its destination;
 *   3. timers: mroce_ctx_on_expiry for every context whose expiry is due.
 * A pass that delivered a packet or fired a timer stays at `now` (the
 * engines may have new packets, e.g. ACKs). A quiet pass jumps `now` to the
 * next event: the earliest of the wire's next arrival, the contexts' expiries
 * and the time a context cut short by its burst or by pacing may send again.
 * Engines that are window-limited return 0 from mroce_ctx_tx, so waiting for an
 * ACK costs no passes.
 *
 * Livelock guard: if `now` has not advanced for max_stall passes, step
 * fails with MROCE_EBUSY (an engine that always has something to do at
 * the same instant would otherwise hang the test).
 *
 * Errors are codes from enum mroce_err. Thread-safety: none; a loop, its
 * wire and its contexts belong to one thread. The loop does not own the
 * wire or the contexts (except through a pair, below).
 */
#ifndef MROCE_IO_TESTWIRE_TWLOOP_H
#define MROCE_IO_TESTWIRE_TWLOOP_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "io/ep.h"
#include "io/testwire/testwire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Zero fields take the default in brackets. */
struct mroce_twloop_cfg {
    uint32_t burst;     /* packets per context per pass [64] */
    int no_pace;        /* 1: ignore egress occupancy when sending [0] */
    uint64_t max_stall; /* passes without time advancing [1000000] */
    uint64_t start_ns;  /* initial virtual time [0] */
};

/* What happens to an endpoint (mroce_twloop_set_mode). */
enum mroce_twloop_mode {
    MROCE_TWLOOP_LIVE,   /* normal */
    MROCE_TWLOOP_DEAF,   /* runs and sends; packets to it are discarded */
    MROCE_TWLOOP_FROZEN, /* vanished: never run, packets to it discarded */
};

struct mroce_twloop_stats {
    uint64_t now;         /* virtual time, ns */
    uint64_t passes;      /* steps taken */
    uint64_t tx_pkts;     /* handed to the wire */
    uint64_t rx_pkts;     /* handed to an engine */
    uint64_t rx_rejected; /* of those, refused by the engine (EPROTO) */
    uint64_t discarded;   /* popped for a DEAF or FROZEN endpoint */
    uint64_t expiries;    /* on_expiry calls */
    int last_wire_err;    /* last negative errno from the wire, or 0 */
    int last_tx_err;      /* last negative mroce_ctx_tx result, or 0 */
};

struct mroce_twloop;

/* Creates a loop over tw and attaches addrs[i] to the wire for ctxs[i]
 * (endpoint index i of the loop). The loop keeps pointers to tw and the
 * contexts, which must outlive it. Errors: EINVAL (NULL, n < 1, an address
 * the wire refuses or already has), ENOMEM. */
int mroce_twloop_create(struct mroce_tw *tw, struct mroce_ctx *const *ctxs,
                        const struct mroce_addr *addrs, int n,
                        const struct mroce_twloop_cfg *cfg,
                        struct mroce_twloop **out);

/* An endpoint other than an engine (a fake, a hostile peer) is driven
 * through struct mroce_ep_ops (io/ep.h); mroce_ep_ctx_ops is the one
 * mroce_twloop_create uses. */

/* As mroce_twloop_create, with eps[i] driven through ops[i]. */
int mroce_twloop_create_ops(struct mroce_tw *tw,
                            const struct mroce_ep_ops *const *ops,
                            void *const *eps, const struct mroce_addr *addrs,
                            int n, const struct mroce_twloop_cfg *cfg,
                            struct mroce_twloop **out);
/* Frees the loop only. NULL is a no-op. */
void mroce_twloop_destroy(struct mroce_twloop *loop);

uint64_t mroce_twloop_now(const struct mroce_twloop *loop);
/* Errors: EINVAL (ep out of range or unknown mode). */
int mroce_twloop_set_mode(struct mroce_twloop *loop, int ep, int mode);
void mroce_twloop_get_stats(const struct mroce_twloop *loop,
                            struct mroce_twloop_stats *out);

/* Sees every packet an endpoint sends, before the wire's impairments,
 * e.g. to print a trace. buf is only lent for the call. */
typedef void (*mroce_twloop_tap)(void *ud, uint64_t now_ns, int from_ep,
                                 const struct mroce_pkt_meta *meta,
                                 const uint8_t *buf, size_t len);
/* tap NULL switches it off. */
void mroce_twloop_set_tap(struct mroce_twloop *loop, mroce_twloop_tap tap,
                          void *ud);

/* One pass, then possibly a jump of `now` (see above), never beyond
 * `limit_ns`. Returns 1 if time advanced, 0 if not. Errors: EBUSY
 * (livelock guard), EINVAL (the wire refused a packet: an engine sent to
 * an unattached address or a packet larger than the wire's max_pkt),
 * ENOBUFS (mroce_ctx_tx wanted a larger buffer). */
int mroce_twloop_step(struct mroce_twloop *loop, uint64_t limit_ns);

/* Called after every pass; returns nonzero when the caller is done. */
typedef int (*mroce_twloop_pred)(struct mroce_twloop *loop, void *arg);

#define MROCE_TWLOOP_DONE 1    /* the predicate said so */
#define MROCE_TWLOOP_TIMEOUT 0 /* now reached deadline_ns first */

/* Steps until pred returns nonzero or `now` reaches deadline_ns (absolute
 * virtual time). pred may be NULL: run until the deadline. pred is also
 * called once before the first pass. Returns MROCE_TWLOOP_DONE or
 * MROCE_TWLOOP_TIMEOUT; errors as mroce_twloop_step. */
int mroce_twloop_run_until(struct mroce_twloop *loop, mroce_twloop_pred pred,
                           void *arg, uint64_t deadline_ns);

/* ---- Two connected endpoints, ready to post work requests ---- */

/* Zero fields take defaults. ctx[i].addr with family MROCE_AF_NONE gets
 * 10.0.0.(i+1). conn[i].send_cq/recv_cq are ignored: each side gets one
 * CQ used for both. cq_depth 0: large enough for the connection's queues.
 * wire.max_pkt 0: the larger mroce_ctx_max_pkt of the two contexts. */
struct mroce_twloop_pair_cfg {
    struct mroce_tw_cfg wire;
    struct mroce_ctx_attr ctx[2];
    struct mroce_conn_attr conn[2];
    uint32_t cq_depth;
    struct mroce_twloop_cfg loop;
    /* how the loop drives both contexts (ep: the struct mroce_ctx *);
     * NULL: mroce_ep_ctx_ops */
    const struct mroce_ep_ops *ops;
    /* MROCE_SEC_*: both connections get this mode and secret before they
     * connect (mroce_conn_set_secret); a context without a crypto
     * provider then gets mroce_crypto_default() */
    int sec_mode;
    uint8_t secret[MROCE_SECRET_LEN];
};

/* Everything belongs to the pair; side 0 is loop endpoint 0. */
struct mroce_twloop_pair {
    struct mroce_tw *tw;
    struct mroce_twloop *loop;
    struct mroce_ctx *ctx[2];
    struct mroce_pd *pd[2];
    struct mroce_cq *cq[2];
    struct mroce_conn *conn[2];
    struct mroce_addr addr[2];
};

/* Opens both contexts, a PD, a CQ and a connection on each, exchanges
 * mroce_conn_params and connects both. Errors: any error of those calls;
 * a negative errno from the wire is reported as EINVAL. *out is NULL on
 * failure. */
int mroce_twloop_pair_create(const struct mroce_twloop_pair_cfg *cfg,
                             struct mroce_twloop_pair **out);
/* Destroys connections, CQs, PDs, contexts, loop and wire. Memory regions
 * registered by the caller are freed with their context. NULL: no-op. */
void mroce_twloop_pair_destroy(struct mroce_twloop_pair *pair);

#ifdef __cplusplus
}
#endif
#endif
