/* mroce-perf --loopback: server and client sides in one process, two
 * datapaths, one thread; parameters exchanged in process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "perf/perf.h"

struct lb {
    struct perf_opts *o;
    struct perf_side srv, cli;
    uint64_t deadline;
};

/* --auth, --encrypt: one random secret for both sides (in process; two
 * processes get theirs from the connection manager). */
static int lb_secure(struct lb *l)
{
    uint8_t secret[MROCE_SECRET_LEN];
    if (!l->o->sec_mode)
        return 0;
    if (getrandom(secret, sizeof(secret), 0) != (ssize_t)sizeof(secret))
        return MROCE_EINVAL;
    int err = mroce_conn_set_secret(l->srv.conn, l->o->sec_mode, secret,
                                    sizeof(secret));
    if (!err)
        err = mroce_conn_set_secret(l->cli.conn, l->o->sec_mode, secret,
                                    sizeof(secret));
    memset(secret, 0, sizeof(secret));
    return err;
}

static int lb_open(struct lb *l)
{
    const char *ip = l->o->local_ip ? l->o->local_ip : "127.0.0.1";
    uint16_t port = l->o->udp_port;
    int err = perf_side_open(&l->srv, l->o, ip, port, 1);
    if (!err)
        err = perf_side_open(&l->cli, l->o, ip, (uint16_t)(port + 1), 2);
    if (!err)
        err = lb_secure(l);
    if (err)
        return err;
    struct mroce_conn_params ps, pc;
    mroce_conn_get_params(l->srv.conn, &ps);
    mroce_conn_get_params(l->cli.conn, &pc);
    err = mroce_conn_connect(l->srv.conn, &pc);
    return err ? err : mroce_conn_connect(l->cli.conn, &ps);
}

/* Drives both datapaths and both sides until `who` (0 client, 1 server)
 * is done. */
static int lb_drive(struct lb *l, struct perf_run *c, struct perf_run *s,
                    int who)
{
    for (;;) {
        perf_progress(l->cli.dp);
        perf_progress(l->srv.dp);
        int rc = perf_run_step(c), rs = perf_run_step(s);
        if (rc < 0 || rs < 0) {
            fprintf(stderr, "mroce-perf: %s side failed: %s\n",
                    rc < 0 ? "client" : "server",
                    mroce_strerror(rc < 0 ? rc : rs));
            return rc < 0 ? rc : rs;
        }
        if (who ? rs : rc)
            return 0;
        if (mroce_dp_now_ns() > l->deadline) {
            fprintf(stderr, "mroce-perf: timed out\n");
            return MROCE_EAGAIN;
        }
    }
}

static int combine_check(int a, int b)
{
    return a < 0 || b < 0 ? -1 : a > 0 || b > 0 ? 1 : 0;
}

static int lb_size(struct lb *l, size_t size, struct perf_result *res)
{
    struct perf_remote rs, rc;
    perf_side_remote(&l->srv, &rs);
    perf_side_remote(&l->cli, &rc);
    struct perf_run *s = NULL, *c = NULL;
    int err = perf_run_create(&l->srv, l->o, 1, size, &rc, &s);
    if (!err)
        err = perf_run_create(&l->cli, l->o, 0, size, &rs, &c);
    if (!err)
        err = lb_drive(l, c, s, 0);
    struct perf_result sr;
    if (!err) {
        perf_run_result(c, res);
        perf_run_end(s, res->iters);
        err = lb_drive(l, c, s, 1);
    }
    if (!err) {
        perf_run_result(s, &sr);
        res->peer = sr.conn;
        res->check = combine_check(res->check, sr.check);
    }
    perf_run_free(s);
    perf_run_free(c);
    return err;
}

static size_t buf_need(const size_t *sizes, int n)
{
    size_t m = 0;
    for (int i = 0; i < n; i++)
        if (sizes[i] * perf_slots(sizes[i]) > m)
            m = sizes[i] * perf_slots(sizes[i]);
    return m;
}

static int lb_size_cb(void *ud, size_t size, struct perf_result *res)
{
    return lb_size(ud, size, res);
}

int perf_main_loopback(struct perf_opts *o)
{
    struct lb l = {.o = o};
    l.deadline = mroce_dp_now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    size_t sizes[32];
    int n = perf_sizes(o, sizes, 32), done = 0;
    struct perf_result *res = calloc((size_t)n, sizeof(*res));
    int err = res ? lb_open(&l) : MROCE_ENOMEM;
    if (!err)
        err = perf_side_buf(&l.srv, buf_need(sizes, n), 1);
    if (!err)
        err = perf_side_buf(&l.cli, buf_need(sizes, n), 0);
    if (!err)
        err = perf_report_sizes(o, sizes, n, lb_size_cb, &l, res, &done);
    if (done)
        perf_report_json(o, res, done, NULL);
    perf_side_close(&l.cli);
    perf_side_close(&l.srv);
    free(res);
    if (err)
        fprintf(stderr, "mroce-perf: %s\n", mroce_strerror(err));
    return err ? 1 : 0;
}
