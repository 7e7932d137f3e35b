/* Ranks as threads of one process; see comm.h.
 *
 * Each operation is two or three barriers around a table of per-rank
 * slots: every rank publishes where its data is, waits until all have,
 * copies what is addressed to it into its own buffer, and waits again
 * so that no rank reuses its data while another still reads it. */
#define _POSIX_C_SOURCE 200809L
#include "sim/comm.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#define THR_MAX 256

struct thr_slot {
    const void *const *out;
    const size_t *out_len;
    const uint64_t *v;
};

struct thr_shared {
    pthread_barrier_t bar;
    int n;
    struct thr_slot slot[THR_MAX];
    /* the start gate: threads run fn only once all of them exist */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate; /* 0 closed, 1 go, -1 give up */
};

/* One rank's comm and its receive buffer. */
struct thr_rank {
    struct mroce_sim_comm comm;
    struct thr_shared *sh;
    uint8_t *in;
    size_t in_cap;
    uint64_t *acc;
    size_t acc_cap;
    void (*fn)(const struct mroce_sim_comm *c, void *arg);
    void *arg;
};

static bool thr_grow(void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static int thr_alltoallv(void *ud, const void *const *out,
                         const size_t *out_len, const void **in, size_t *in_len)
{
    struct thr_rank *r = ud;
    struct thr_shared *sh = r->sh;
    int me = r->comm.rank;
    sh->slot[me].out = out;
    sh->slot[me].out_len = out_len;
    pthread_barrier_wait(&sh->bar);
    size_t total = 0;
    for (int q = 0; q < sh->n; q++)
        total += in_len[q] = sh->slot[q].out_len[me];
    bool ok = thr_grow((void **)&r->in, &r->in_cap, total + 1);
    for (int q = 0, off = 0; ok && q < sh->n; q++) {
        if (in_len[q])
            memcpy(r->in + off, sh->slot[q].out[me], in_len[q]);
        off += (int)in_len[q];
    }
    pthread_barrier_wait(&sh->bar);
    *in = r->in;
    /* a failure is local; the caller's next reduction spreads it */
    return ok ? 0 : MROCE_ENOMEM;
}

static int thr_allreduce(void *ud, uint64_t *v, size_t n_sum, size_t n_max)
{
    struct thr_rank *r = ud;
    struct thr_shared *sh = r->sh;
    size_t n = n_sum + n_max;
    size_t bytes = n * sizeof(*v);
    if (!thr_grow((void **)&r->acc, &r->acc_cap, bytes + 1))
        return MROCE_ENOMEM; /* cannot happen after the first call */
    sh->slot[r->comm.rank].v = v;
    pthread_barrier_wait(&sh->bar);
    memcpy(r->acc, sh->slot[0].v, bytes);
    for (int q = 1; q < sh->n; q++) {
        const uint64_t *w = sh->slot[q].v;
        for (size_t i = 0; i < n_sum; i++)
            r->acc[i] += w[i];
        for (size_t i = n_sum; i < n; i++)
            r->acc[i] = w[i] > r->acc[i] ? w[i] : r->acc[i];
    }
    pthread_barrier_wait(&sh->bar);
    memcpy(v, r->acc, bytes);
    return 0;
}

static void *thr_main(void *p)
{
    struct thr_rank *r = p;
    struct thr_shared *sh = r->sh;
    pthread_mutex_lock(&sh->mu);
    while (sh->gate == 0)
        pthread_cond_wait(&sh->cv, &sh->mu);
    int go = sh->gate > 0;
    pthread_mutex_unlock(&sh->mu);
    if (go)
        r->fn(&r->comm, r->arg);
    return NULL;
}

static void thr_open_gate(struct thr_shared *sh, int how)
{
    pthread_mutex_lock(&sh->mu);
    sh->gate = how;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

int mroce_sim_comm_threads_run(
    int n, void (*fn)(const struct mroce_sim_comm *c, void *arg), void *arg)
{
    if (n < 1 || n > THR_MAX || !fn)
        return MROCE_EINVAL;
    struct thr_shared *sh = calloc(1, sizeof(*sh));
    struct thr_rank *r = calloc((size_t)n, sizeof(*r));
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    int err = sh && r && th ? 0 : MROCE_ENOMEM;
    if (!err && pthread_barrier_init(&sh->bar, NULL, (unsigned)n))
        err = MROCE_ENOMEM;
    bool inited = !err;
    if (inited) {
        pthread_mutex_init(&sh->mu, NULL);
        pthread_cond_init(&sh->cv, NULL);
    }
    int started = 0;
    for (int i = 0; !err && i < n; i++) {
        sh->n = n;
        r[i] = (struct thr_rank){
            .comm = {.rank = i,
                     .size = n,
                     .alltoallv = thr_alltoallv,
                     .allreduce = thr_allreduce,
                     .ud = &r[i]},
            .sh = sh,
            .fn = fn,
            .arg = arg,
        };
    }
    for (int i = 0; !err && i < n; i++) {
        if (pthread_create(&th[i], NULL, thr_main, &r[i]))
            err = MROCE_ENOMEM;
        else
            started++;
    }
    /* all or none: a barrier with missing ranks would never open */
    if (started)
        thr_open_gate(sh, err ? -1 : 1);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (inited) {
        pthread_barrier_destroy(&sh->bar);
        pthread_mutex_destroy(&sh->mu);
        pthread_cond_destroy(&sh->cv);
    }
    for (int i = 0; r && i < n; i++) {
        free(r[i].in);
        free(r[i].acc);
    }
    free(th);
    free(r);
    free(sh);
    return err;
}

int mroce_sim_comm_allreduce(const struct mroce_sim_comm *c, uint64_t *v,
                             size_t n_sum, size_t n_max)
{
    if (!c || c->size == 1)
        return 0;
    return c->allreduce(c->ud, v, n_sum, n_max);
}
