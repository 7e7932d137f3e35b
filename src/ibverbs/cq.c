/* Completion queues and completion channels.
 *
 * A verbs CQ is one device CQ (the engine's completions, filled by the
 * NIC thread's engine calls) plus a ring of struct ibv_wc that the NIC
 * thread writes and ibv_poll_cq reads: one producer, one consumer, no
 * lock between them. A completion channel is an eventfd in semaphore mode
 * and a queue of the CQs that have an event; ibv_req_notify_cq arms a CQ,
 * and the NIC queues an event when it next writes a completion into it. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ibverbs/sv.h"

#define CQ_ENGINE_SLACK 256 /* device CQ room beyond 2 x cqe */
#define CQ_EMPTY_YIELD 4    /* empty polls in a row before a yield */

static uint32_t cq_pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* ---- completion channels ---- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ic)
{
    struct sv_chan *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        errno = ENOMEM;
        return NULL;
    }
    ch->ibv.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (ch->ibv.fd < 0) {
        free(ch);
        return NULL;
    }
    ch->ibv.context = ic;
    pthread_mutex_init(&ch->mu, NULL);
    return &ch->ibv;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct sv_chan *ch = (struct sv_chan *)(void *)channel;
    pthread_mutex_lock(&ch->mu);
    int busy = ch->ibv.refcnt;
    pthread_mutex_unlock(&ch->mu);
    if (busy)
        return EBUSY; /* CQs still use it */
    close(ch->ibv.fd);
    pthread_mutex_destroy(&ch->mu);
    free(ch->ev);
    free(ch);
    return 0;
}

static int chan_grow(struct sv_chan *ch)
{
    uint32_t cap = ch->ev_cap ? ch->ev_cap * 2 : 16;
    struct sv_cq **ev = malloc(cap * sizeof(*ev));
    if (!ev)
        return -1;
    for (uint32_t i = 0; i < ch->ev_count; i++)
        ev[i] = ch->ev[(ch->ev_head + i) % ch->ev_cap];
    free(ch->ev);
    ch->ev = ev;
    ch->ev_cap = cap;
    ch->ev_head = 0;
    return 0;
}

/* NIC thread: the CQ was armed and got a completion. */
void sv_chan_push(struct sv_cq *cq)
{
    struct sv_chan *ch = cq->chan;
    if (!ch)
        return;
    pthread_mutex_lock(&ch->mu);
    bool ok = ch->ev_count < ch->ev_cap || chan_grow(ch) == 0;
    if (ok)
        ch->ev[(ch->ev_head + ch->ev_count++) % ch->ev_cap] = cq;
    pthread_mutex_unlock(&ch->mu);
    uint64_t one = 1;
    if (ok && write(ch->ibv.fd, &one, sizeof(one)) != sizeof(one))
        return; /* the counter is at its maximum: readers are behind */
}

int ibv_get_cq_event_1_1(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                         void **cq_context)
{
    struct sv_chan *ch = (struct sv_chan *)(void *)channel;
    uint64_t v;
    if (read(ch->ibv.fd, &v, sizeof(v)) != sizeof(v))
        return -1; /* errno: EAGAIN on a non-blocking fd, EINTR */
    pthread_mutex_lock(&ch->mu);
    struct sv_cq *c = NULL;
    if (ch->ev_count) {
        c = ch->ev[ch->ev_head];
        ch->ev_head = (ch->ev_head + 1) % ch->ev_cap;
        ch->ev_count--;
        c->events_delivered++;
    }
    pthread_mutex_unlock(&ch->mu);
    if (!c) {
        errno = EAGAIN; /* its CQ was destroyed meanwhile */
        return -1;
    }
    *cq = &c->ibv;
    *cq_context = c->ibv.cq_context;
    return 0;
}
SV_1_1(ibv_get_cq_event);

void ibv_ack_cq_events_1_1(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
SV_1_1(ibv_ack_cq_events);

/* Events still queued for a CQ being destroyed are dropped (and the
 * semaphore taken back, so a reader does not wake for them). */
static void chan_forget(struct sv_chan *ch, struct sv_cq *cq)
{
    pthread_mutex_lock(&ch->mu);
    uint32_t kept = 0, dropped = 0;
    for (uint32_t i = 0; i < ch->ev_count; i++) {
        struct sv_cq *e = ch->ev[(ch->ev_head + i) % ch->ev_cap];
        if (e == cq)
            dropped++;
        else
            ch->ev[(ch->ev_head + kept++) % ch->ev_cap] = e;
    }
    ch->ev_count = kept;
    ch->ibv.refcnt--;
    pthread_mutex_unlock(&ch->mu);
    int fl = fcntl(ch->ibv.fd, F_GETFL);
    fcntl(ch->ibv.fd, F_SETFL, fl | O_NONBLOCK);
    uint64_t v;
    while (dropped-- && read(ch->ibv.fd, &v, sizeof(v)) == sizeof(v))
        ;
    fcntl(ch->ibv.fd, F_SETFL, fl);
}

/* ---- CQs ---- */

static int cq_alloc(struct sv_cq *cq, int cqe)
{
    uint32_t n = cq_pow2((uint32_t)cqe + 1);
    cq->ring = calloc(n, sizeof(*cq->ring));
    if (!cq->ring)
        return ENOMEM;
    cq->mask = n - 1;
    cq->ibv.cqe = (int)(n - 1); /* at least what was asked, as providers */
    return 0;
}

static int cq_engine(struct sv_ctx *c, struct sv_cq *cq)
{
    uint32_t depth = 2 * (uint32_t)cq->ibv.cqe + CQ_ENGINE_SLACK;
    sv_ctl_lock(c);
    int rc = mroce_cq_create(c->eng, depth, &cq->cq);
    if (!rc) {
        cq->next = c->cqs;
        c->cqs = cq;
    }
    sv_ctl_unlock(c);
    return rc ? sv_errno(rc) : 0;
}

struct ibv_cq *ibv_create_cq_1_1(struct ibv_context *ic, int cqe,
                                 void *cq_context,
                                 struct ibv_comp_channel *channel, int vector)
{
    struct sv_ctx *c = sv_ctx_of(ic);
    if (cqe < 1 || cqe > SV_MAX_CQE || vector < 0 ||
        vector >= ic->num_comp_vectors) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_cq *cq = calloc(1, sizeof(*cq));
    int err = cq ? cq_alloc(cq, cqe) : ENOMEM;
    if (!err)
        err = cq_engine(c, cq);
    if (err) {
        if (cq)
            free(cq->ring);
        free(cq);
        errno = err;
        return NULL;
    }
    cq->ctx = c;
    cq->chan = (struct sv_chan *)(void *)channel;
    cq->ibv.context = ic;
    cq->ibv.channel = channel;
    cq->ibv.cq_context = cq_context;
    pthread_mutex_init(&cq->ibv.mutex, NULL);
    pthread_cond_init(&cq->ibv.cond, NULL);
    if (cq->chan) {
        pthread_mutex_lock(&cq->chan->mu);
        cq->chan->ibv.refcnt++;
        pthread_mutex_unlock(&cq->chan->mu);
    }
    return &cq->ibv;
}
SV_1_1(ibv_create_cq);

static void cq_unlink(struct sv_ctx *c, struct sv_cq *cq)
{
    struct sv_cq **pp = &c->cqs;
    while (*pp && *pp != cq)
        pp = &(*pp)->next;
    if (*pp)
        *pp = cq->next;
}

/* Waits until every event handed out by ibv_get_cq_event was acked. */
int ibv_destroy_cq_1_1(struct ibv_cq *ibcq)
{
    struct sv_cq *cq = sv_cq_of(ibcq);
    struct sv_ctx *c = cq->ctx;
    sv_ctl_lock(c);
    if (cq->users) {
        sv_ctl_unlock(c);
        return EBUSY; /* QPs still use it */
    }
    cq_unlink(c, cq);
    mroce_cq_destroy(cq->cq);
    sv_ctl_unlock(c);
    if (cq->chan)
        chan_forget(cq->chan, cq);
    pthread_mutex_lock(&ibcq->mutex);
    while (ibcq->comp_events_completed != cq->events_delivered)
        pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
    pthread_mutex_unlock(&ibcq->mutex);
    pthread_mutex_destroy(&ibcq->mutex);
    pthread_cond_destroy(&ibcq->cond);
    free(cq->ring);
    free(cq);
    return 0;
}
SV_1_1(ibv_destroy_cq);

int ibv_resize_cq_1_1(struct ibv_cq *cq, int cqe)
{
    if (cqe < 1 || cqe > SV_MAX_CQE)
        return EINVAL;
    return cqe <= cq->cqe ? 0 : EOPNOTSUPP; /* a ring cannot grow */
}
SV_1_1(ibv_resize_cq);

/* ---- the application's side of the ring ---- */

/* Up to n completions out of the ring. */
static uint32_t cq_take(struct sv_cq *cq, int n, struct ibv_wc *wc)
{
    while (
        atomic_flag_test_and_set_explicit(&cq->poll_lock, memory_order_acquire))
        ;
    uint32_t h = atomic_load_explicit(&cq->head, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&cq->tail, memory_order_acquire);
    uint32_t k = t - h < (uint32_t)n ? t - h : (uint32_t)n;
    for (uint32_t i = 0; i < k; i++)
        wc[i] = cq->ring[(h + i) & cq->mask];
    atomic_store_explicit(&cq->head, h + k, memory_order_release);
    cq->empty_polls = k ? 0 : cq->empty_polls + 1;
    atomic_flag_clear_explicit(&cq->poll_lock, memory_order_release);
    if (k && atomic_exchange(&cq->nic_waits, false))
        sv_nic_doorbell(cq->ctx); /* the NIC has more for this ring */
    return k;
}

/* An empty ring: the polling thread lends the NIC its time (one pass, if
 * the NIC is not in one), then looks again; a poller that keeps finding
 * nothing yields its core now and then. */
int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    struct sv_cq *cq = sv_cq_of(ibcq);
    if (n < 0)
        return -1;
    uint32_t k = cq_take(cq, n, wc);
    if (k)
        return (int)k;
    int moved = cq->ctx->prof.assist ? sv_nic_assist(cq->ctx) : -1;
    if (moved >= 0)
        k = cq_take(cq, n, wc);
    /* a pass that sent or received without completing anything here:
     * the answer needs the peer (or this NIC) to run first */
    if (!k && (moved > 0 || cq->empty_polls % CQ_EMPTY_YIELD == 0))
        sched_yield(); /* a busy poller leaves the core to the NIC */
    return (int)k;
}

int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct sv_cq *cq = sv_cq_of(ibcq);
    if (!cq->chan)
        return EINVAL;
    atomic_store(&cq->armed, solicited_only ? 2 : 1);
    return 0;
}
