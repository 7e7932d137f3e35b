/* mroce-perf coll: forks one process per rank and watches them (see
 * coll.h). A rank that fails makes the others stop at once; a run that
 * outlives --timeout is killed. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf/coll.h"

static const char *const op_names[] = {"allreduce", "alltoall", "allgather"};

const char *coll_op_name(int op)
{
    return op >= 0 && op < 3 ? op_names[op] : "?";
}

double coll_busbw_factor(const struct coll_shape *sh)
{
    double n = sh->n;
    return sh->op == COLL_ALLREDUCE ? 2 * (n - 1) / n : (n - 1) / n;
}

/* S rounded down to what the collective takes (at least one unit). */
void coll_shape_init(struct coll_shape *sh, const struct perf_opts *o)
{
    memset(sh, 0, sizeof(*sh));
    sh->op = o->coll_op;
    sh->n = o->ranks;
    sh->flavour = o->coll_flavour;
    sh->channels = o->streams;
    size_t n = (size_t)sh->n, c = sh->channels;
    if (sh->op == COLL_ALLREDUCE) {
        size_t count = o->size / sizeof(float) / n * n;
        sh->unit = count ? count : n;
        sh->bytes = sh->unit * sizeof(float);
        size_t chunk = sh->unit / n, slice = (128u << 10) / sizeof(float);
        /* Pipelining: every channel gets slices, a slice <= 128 KiB. */
        size_t per = (chunk + c - 1) / c;
        sh->slice = per < slice ? per : slice;
    } else {
        size_t u = o->size / n;
        if (sh->op == COLL_ALLTOALL)
            u = u / c * c;
        sh->unit = u ? u : (sh->op == COLL_ALLTOALL ? c : 1);
        sh->bytes = sh->unit * n;
        size_t per = (sh->unit + c - 1) / c;
        sh->slice = per < (128u << 10) ? per : (128u << 10);
    }
}

static void coll_child(const struct perf_opts *o, int r,
                       struct mroce_cm_listener **ls, const uint16_t *ports)
{
    for (int i = 0; i < o->ranks; i++)
        if (i != r)
            mroce_cm_listener_close(ls[i]);
    struct coll_rank k;
    int err = coll_rank_open(&k, o, r, ls[r], ports);
    int rc = err ? 1 : coll_rank_main(&k);
    if (err)
        fprintf(stderr, "mroce-perf coll: rank %d: set-up: %s (%s)\n", r,
                mroce_strerror(err), mroce_cm_errmsg());
    coll_rank_close(&k);
    fflush(stdout);
    exit(rc); /* stdio was flushed before fork; LSan checks the rank */
}

static int coll_listen(const struct perf_opts *o, struct mroce_cm_listener **ls,
                       uint16_t *ports)
{
    for (int r = 0; r < o->ranks; r++) {
        int err = mroce_cm_listen("127.0.0.1", 0, &coll_cm_attr, &ls[r]);
        if (err) {
            fprintf(stderr, "mroce-perf coll: %s\n", mroce_cm_errmsg());
            while (r--)
                mroce_cm_listener_close(ls[r]);
            return err;
        }
        ports[r] = mroce_cm_listener_port(ls[r]);
    }
    return 0;
}

static void coll_kill(pid_t *pids, int n, int sig)
{
    for (int r = 0; r < n; r++)
        if (pids[r] > 0)
            kill(pids[r], sig);
}

/* The first failure (exit status or signal) of a rank, reported once. */
static int coll_reap(pid_t *pids, int n, int *alive)
{
    int failed = 0, st;
    for (int r = 0; r < n; r++) {
        if (pids[r] <= 0 || waitpid(pids[r], &st, WNOHANG) != pids[r])
            continue;
        pids[r] = 0;
        (*alive)--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        failed = 1;
        if (WIFSIGNALED(st))
            fprintf(stderr, "mroce-perf coll: rank %d killed by signal %d\n", r,
                    WTERMSIG(st));
        else
            fprintf(stderr, "mroce-perf coll: rank %d exited with %d\n", r,
                    WEXITSTATUS(st));
    }
    return failed;
}

static int coll_watch(const struct perf_opts *o, pid_t *pids, int alive)
{
    uint64_t end =
        mroce_dp_now_ns() + (uint64_t)(o->timeout_s + 5) * 1000000000ull;
    int failed = 0;
    struct timespec ts = {0, 5000000};
    while (alive > 0) {
        if (coll_reap(pids, o->ranks, &alive) && !failed) {
            failed = 1;
            coll_kill(pids, o->ranks, SIGTERM); /* the others would hang */
        }
        if (alive > 0 && mroce_dp_now_ns() > end) {
            fprintf(stderr, "mroce-perf coll: timed out after %d s\n",
                    o->timeout_s);
            coll_kill(pids, o->ranks, SIGKILL);
            failed = 1;
            end = UINT64_MAX;
        }
        nanosleep(&ts, NULL);
    }
    return failed;
}

int perf_main_coll(struct perf_opts *o)
{
    struct mroce_cm_listener *ls[COLL_MAX_RANKS];
    uint16_t ports[COLL_MAX_RANKS];
    pid_t pids[COLL_MAX_RANKS] = {0};
    if (o->ranks < 2 || o->ranks > COLL_MAX_RANKS || !o->streams ||
        o->datapath != MROCE_DP_UDP || o->all_sizes || o->duration > 0) {
        fprintf(stderr,
                "mroce-perf coll: needs 2..%d ranks and the UDP "
                "datapath; one size (-s) and -n, not -a or -D\n",
                COLL_MAX_RANKS);
        return 1;
    }
    if (coll_listen(o, ls, ports))
        return 1;
    fflush(stdout);
    int alive = 0;
    for (int r = 0; r < o->ranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            coll_child(o, r, ls, ports);
        if (pids[r] < 0) {
            perror("mroce-perf coll: fork");
            coll_kill(pids, r, SIGTERM);
            break;
        }
        alive++;
    }
    for (int r = 0; r < o->ranks; r++)
        mroce_cm_listener_close(ls[r]);
    int failed = coll_watch(o, pids, alive) || alive < o->ranks;
    return failed ? 1 : 0;
}
