/* Asynchronous events: a queue behind the context's async_fd (an eventfd
 * in semaphore mode). The NIC reports a QP that enters the error state
 * (IBV_EVENT_QP_FATAL) and a drained send queue (IBV_EVENT_SQ_DRAINED);
 * ibv_destroy_qp waits until the application acked the events it got. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "ibverbs/sv.h"

int sv_async_init(struct sv_async *a)
{
    pthread_mutex_init(&a->mu, NULL);
    return 0;
}

void sv_async_fini(struct sv_async *a)
{
    pthread_mutex_destroy(&a->mu);
    free(a->ev);
}

static int async_grow(struct sv_async *a)
{
    uint32_t cap = a->cap ? 2 * a->cap : 16;
    struct ibv_async_event *ev = malloc(cap * sizeof(*ev));
    if (!ev)
        return -1;
    for (uint32_t i = 0; i < a->count; i++)
        ev[i] = a->ev[(a->head + i) % a->cap];
    free(a->ev);
    a->ev = ev;
    a->cap = cap;
    a->head = 0;
    return 0;
}

void sv_async_qp(struct sv_ctx *c, struct sv_qp *q, enum ibv_event_type t)
{
    struct sv_async *a = &c->async;
    pthread_mutex_lock(&a->mu);
    bool ok = a->count < a->cap || async_grow(a) == 0;
    if (ok)
        a->ev[(a->head + a->count++) % a->cap] =
            (struct ibv_async_event){.element.qp = &q->ibv, .event_type = t};
    pthread_mutex_unlock(&a->mu);
    uint64_t one = 1;
    if (ok && write(c->vctx.context.async_fd, &one, sizeof(one)) != sizeof(one))
        return; /* the counter is full: the application reads none */
    sv_log(c, "qp %u: async event %s", q->ibv.qp_num, ibv_event_type_str(t));
}

int ibv_get_async_event_1_1(struct ibv_context *ic, struct ibv_async_event *ev)
{
    struct sv_ctx *c = sv_ctx_of(ic);
    struct sv_async *a = &c->async;
    uint64_t v;
    if (read(ic->async_fd, &v, sizeof(v)) != sizeof(v))
        return -1; /* errno: EAGAIN on a non-blocking fd, EINTR */
    pthread_mutex_lock(&a->mu);
    bool got = a->count > 0;
    if (got) {
        *ev = a->ev[a->head];
        a->head = (a->head + 1) % a->cap;
        a->count--;
        sv_qp_of(ev->element.qp)->events_delivered++;
    }
    pthread_mutex_unlock(&a->mu);
    if (!got) {
        errno = EAGAIN; /* its QP was destroyed meanwhile */
        return -1;
    }
    return 0;
}
SV_1_1(ibv_get_async_event);

void ibv_ack_async_event_1_1(struct ibv_async_event *ev)
{
    struct ibv_qp *qp = ev->element.qp;
    if (ev->event_type != IBV_EVENT_QP_FATAL &&
        ev->event_type != IBV_EVENT_SQ_DRAINED)
        return;
    pthread_mutex_lock(&qp->mutex);
    qp->events_completed++;
    pthread_cond_signal(&qp->cond);
    pthread_mutex_unlock(&qp->mutex);
}
SV_1_1(ibv_ack_async_event);

/* Events still queued for a QP being destroyed are dropped. */
void sv_async_forget(struct sv_ctx *c, struct sv_qp *q)
{
    struct sv_async *a = &c->async;
    pthread_mutex_lock(&a->mu);
    uint32_t kept = 0, dropped = 0;
    for (uint32_t i = 0; i < a->count; i++) {
        struct ibv_async_event e = a->ev[(a->head + i) % a->cap];
        if (e.element.qp == &q->ibv)
            dropped++;
        else
            a->ev[(a->head + kept++) % a->cap] = e;
    }
    a->count = kept;
    pthread_mutex_unlock(&a->mu);
    int fd = c->vctx.context.async_fd;
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    uint64_t v;
    while (dropped-- && read(fd, &v, sizeof(v)) == sizeof(v))
        ;
    fcntl(fd, F_SETFL, fl);
}
