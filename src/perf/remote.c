/* mroce-perf server and client: one side per process, set up through the
 * CM (mroce_cm.h); control messages (ctl.h) on its TCP channel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_cm.h>

#include "perf/ctl.h"
#include "perf/perf.h"

#define RS_CTL_EVERY 64 /* busy passes between looks at the control socket */

struct rs {
    struct perf_opts *o;
    struct mroce_cm *cm;
    struct perf_side side;
    struct perf_remote peer;
    uint64_t deadline;
    unsigned polls, idle;
};

static int rs_expired(struct rs *r)
{
    if (mroce_dp_now_ns() <= r->deadline)
        return 0;
    fprintf(stderr, "mroce-perf: timed out after %d s\n", r->o->timeout_s);
    return 1;
}

static int rs_send(struct rs *r, uint32_t cmd, const uint64_t *v, int nv)
{
    struct perf_ctl c = {.cmd = cmd};
    for (int i = 0; i < nv && i < PERF_CTL_NV; i++)
        c.v[i] = v[i];
    uint8_t buf[PERF_CTL_LEN];
    perf_ctl_encode(&c, buf);
    return mroce_cm_send(r->cm, buf, sizeof(buf));
}

/* Next control message without blocking: 1 got one, 0 none. */
static int rs_try_recv(struct rs *r, struct perf_ctl *c)
{
    uint8_t buf[PERF_CTL_LEN + 8];
    int n = mroce_cm_recv(r->cm, buf, sizeof(buf), 0);
    if (n == MROCE_EAGAIN)
        return 0;
    if (n < 0) {
        fprintf(stderr, "mroce-perf: control channel: %s\n", mroce_cm_errmsg());
        return n;
    }
    if (perf_ctl_decode(buf, n, c)) {
        fprintf(stderr, "mroce-perf: malformed control message\n");
        return MROCE_EPROTO;
    }
    return 1;
}

/* Progresses the datapath (and run, if any) until a control message of
 * type cmd arrives. The control socket costs two system calls a look, so
 * a busy datapath looks every RS_CTL_EVERY passes, an idle one each. */
static int rs_wait(struct rs *r, struct perf_run *run, uint32_t cmd,
                   struct perf_ctl *c)
{
    for (unsigned pass = 1;; pass++) {
        int moved = perf_progress_idle(r->side.dp, &r->idle);
        int rc = run ? perf_run_step(run) : 0;
        if (rc < 0)
            return rc;
        if (moved > 0 && pass % RS_CTL_EVERY)
            continue;
        rc = rs_try_recv(r, c);
        if (rc < 0)
            return rc;
        if (rc && c->cmd == cmd)
            return 0;
        if (rc && c->cmd == PERF_CMD_QUIT)
            return 1;
        if (rc) {
            fprintf(stderr, "mroce-perf: unexpected control %u\n", c->cmd);
            return MROCE_EPROTO;
        }
        if (rs_expired(r))
            return MROCE_EAGAIN;
    }
}

/* Every ~1000 loops: has the peer gone? Then the connection is
 * disconnected and outstanding work requests are flushed. */
static int rs_alive(struct rs *r)
{
    if (++r->polls % 1024)
        return 1;
    int rc = mroce_cm_poll(r->cm, r->side.conn);
    if (rc == 1)
        fprintf(stderr, "mroce-perf: peer closed the connection\n");
    return rc == 0;
}

static int rs_drive(struct rs *r, struct perf_run *run)
{
    for (;;) {
        perf_progress_idle(r->side.dp, &r->idle);
        int rc = perf_run_step(run);
        if (rc)
            return rc < 0 ? rc : 0;
        if (!rs_alive(r)) {
            /* Let the flushed completions show (WR_FLUSH_ERR). */
            rc = perf_run_step(run);
            return rc < 0 ? rc : MROCE_ESTATE;
        }
        if (rs_expired(r))
            return MROCE_EAGAIN;
    }
}

/* Whether a client's CONFIG stays within what this server allows. */
static const char *rs_config_refusal(const struct perf_opts *o,
                                     const struct perf_ctl *c)
{
    if (c->v[0] >= PERF_UDP_PINGPONG)
        return "unknown test";
    if (!c->v[1] || c->v[1] > o->max_size)
        return "message size above --max-size";
    if ((c->v[5] & 1) && (8u << 20) > o->max_size)
        return "-a sizes above --max-size";
    if (!c->v[2] || !c->v[4] || c->v[4] > 65536)
        return "iterations or depth out of range";
    return NULL;
}

/* R-CM-8: the check of the peer's blob (CONFIG) before the CM answers: a
 * server says nothing to a client that asks for more than it allows. */
static int rs_check_blob(void *ud, const void *blob, size_t len)
{
    struct rs *r = ud;
    struct perf_ctl c;
    if (perf_ctl_decode(blob, (int)len, &c) || c.cmd != PERF_CMD_CONFIG) {
        fprintf(stderr, "mroce-perf: peer sent no valid CONFIG\n");
        return -1;
    }
    const char *why =
        r->o->mode == PERF_SERVER ? rs_config_refusal(r->o, &c) : NULL;
    if (why)
        fprintf(stderr, "mroce-perf: client refused: %s\n", why);
    return why ? -1 : 0;
}

static int rs_setup(struct rs *r, const uint64_t *cfg, uint64_t *peer_cfg)
{
    char ip[MROCE_CM_ADDRSTRLEN];
    const char *lip = r->o->local_ip;
    if (!lip && mroce_cm_local_ip(r->cm, ip, sizeof(ip)) == 0)
        lip = ip;
    int err = perf_side_open(&r->side, r->o, lip ? lip : "127.0.0.1",
                             r->o->udp_port, r->o->mode == PERF_SERVER ? 1 : 2);
    if (err)
        return err;
    struct perf_ctl c = {.cmd = PERF_CMD_CONFIG};
    memcpy(c.v, cfg, sizeof(c.v));
    uint8_t mine[PERF_CTL_LEN], theirs[PERF_CTL_LEN];
    perf_ctl_encode(&c, mine);
    size_t got = 0;
    err = mroce_cm_establish(r->cm, r->side.conn, mine, sizeof(mine), theirs,
                             sizeof(theirs), &got, r->o->timeout_s * 1000);
    if (err) {
        fprintf(stderr, "mroce-perf: CM: %s\n", mroce_cm_errmsg());
        return err;
    }
    if (perf_ctl_decode(theirs, (int)got, &c) || c.cmd != PERF_CMD_CONFIG)
        return MROCE_EPROTO;
    memcpy(peer_cfg, c.v, sizeof(c.v));
    /* R-CM-9: the mode the CM agreed, for the report */
    r->o->sec_mode = mroce_conn_sec_mode(r->side.conn);
    return 0;
}

/* Registers the buffer and swaps its location with the peer, whose
 * buffer must hold every slot this run writes or reads there. */
static int rs_mr(struct rs *r, size_t len, int who)
{
    int err = perf_side_buf(&r->side, len, who);
    if (err)
        return err;
    struct perf_remote me;
    perf_side_remote(&r->side, &me);
    uint64_t v[3] = {me.addr, me.rkey, me.len};
    err = rs_send(r, PERF_CMD_MR, v, 3);
    struct perf_ctl c;
    if (!err)
        err = rs_wait(r, NULL, PERF_CMD_MR, &c);
    r->peer = (struct perf_remote){c.v[0], (uint32_t)c.v[1], c.v[2]};
    if (!err && r->peer.len < len) {
        fprintf(stderr, "mroce-perf: peer buffer of %llu bytes, need %zu\n",
                (unsigned long long)r->peer.len, len);
        err = MROCE_EPROTO;
    }
    return err;
}

static void rs_cfg(const struct perf_opts *o, uint64_t *v)
{
    memset(v, 0, PERF_CTL_NV * sizeof(*v));
    v[0] = (uint64_t)o->test;
    v[1] = o->size;
    v[2] = o->iters;
    v[3] = (uint64_t)(o->duration * 1e9);
    v[4] = o->tx_depth;
    v[5] = (uint64_t)o->all_sizes | (uint64_t)o->check << 1;
    v[6] = (uint64_t)o->paths << 16 | o->streams;
}

static size_t rs_buf_need(const struct perf_opts *o)
{
    size_t sizes[32], m = 0;
    int n = perf_sizes(o, sizes, 32);
    for (int i = 0; i < n; i++)
        if (sizes[i] * perf_slots(sizes[i]) > m)
            m = sizes[i] * perf_slots(sizes[i]);
    return m;
}

static int rs_open(struct rs *r)
{
    struct perf_opts *o = r->o;
    r->deadline = mroce_dp_now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    uint64_t mine[PERF_CTL_NV], theirs[PERF_CTL_NV];
    rs_cfg(o, mine);
    int err = rs_setup(r, mine, theirs);
    if (err)
        return err;
    if (theirs[6] != mine[6])
        fprintf(stderr,
                "mroce-perf: warning: peer has %u paths %u streams "
                "(effective: the smaller)\n",
                (unsigned)(theirs[6] >> 16), (unsigned)(theirs[6] & 0xffff));
    if (o->mode == PERF_SERVER) { /* the client's test decides, within
                                     the limits rs_check_blob checked */
        o->test = (int)theirs[0];
        o->size = theirs[1];
        o->iters = theirs[2];
        o->duration = (double)theirs[3] / 1e9;
        o->tx_depth = (uint32_t)theirs[4];
        o->all_sizes = theirs[5] & 1;
        o->check = theirs[5] >> 1 & 1;
    }
    return rs_mr(r, rs_buf_need(o), o->mode == PERF_SERVER);
}

static void rs_close(struct rs *r)
{
    mroce_cm_close(r->cm);
    perf_side_close(&r->side);
}

/* The last line of a failed run. MROCE_EPROTO is how a failed completion
 * or a malformed control message ends a run, each reported above; its
 * library text (a dropped packet) would mislead. */
static const char *rs_why(int err)
{
    return err == MROCE_EPROTO || err == MROCE_EACCES
               ? "stopped by the error above"
               : mroce_strerror(err);
}

/* ---- Client ---- */

static int cli_size(struct rs *r, size_t size, struct perf_result *res)
{
    struct perf_ctl c;
    uint64_t v = size;
    int err = rs_send(r, PERF_CMD_RUN, &v, 1);
    if (!err)
        err = rs_wait(r, NULL, PERF_CMD_GO, &c);
    struct perf_run *run = NULL;
    if (!err)
        err = perf_run_create(&r->side, r->o, 0, size, &r->peer, &run);
    if (!err)
        err = rs_drive(r, run);
    if (!err) {
        perf_run_result(run, res);
        v = res->iters;
        err = rs_send(r, PERF_CMD_END, &v, 1);
    }
    if (!err)
        err = rs_wait(r, run, PERF_CMD_RESULT, &c);
    if (!err) {
        int sc = (int)c.v[0] - 1;
        res->check = sc < 0 || res->check < 0 ? -1 : sc | res->check;
        res->peer.retx_pkts = c.v[1];
        res->peer.rx_ecn_ce = c.v[2];
    }
    perf_run_free(run);
    return err;
}

static int cli_size_cb(void *ud, size_t size, struct perf_result *res)
{
    return cli_size(ud, size, res);
}

int perf_main_client(struct perf_opts *o)
{
    struct rs r = {.o = o};
    struct mroce_cm_attr a;
    perf_cm_attr(o, &a);
    a.check_blob = rs_check_blob;
    a.ud = &r;
    int err = mroce_cm_dial(o->host, o->port, o->timeout_s * 1000, &a, &r.cm);
    if (err) {
        fprintf(stderr, "mroce-perf: %s\n", mroce_cm_errmsg());
        return 1;
    }
    size_t sizes[32];
    int n = perf_sizes(o, sizes, 32), done = 0;
    struct perf_result *res = calloc((size_t)n, sizeof(*res));
    err = res ? rs_open(&r) : MROCE_ENOMEM;
    if (!err)
        err = perf_report_sizes(o, sizes, n, cli_size_cb, &r, res, &done);
    if (!err)
        rs_send(&r, PERF_CMD_QUIT, NULL, 0);
    if (done)
        perf_report_json(o, res, done, NULL);
    rs_close(&r);
    free(res);
    if (err)
        fprintf(stderr, "mroce-perf: client: %s\n", rs_why(err));
    return err ? 1 : 0;
}

/* ---- Server ---- */

/* One RUN of the server: *res gets this side's result and counters,
 * also when the run fails (a run ended by an attack shows why). */
static int srv_size(struct rs *r, size_t size, struct perf_result *res)
{
    struct perf_run *run = NULL;
    int err = perf_run_create(&r->side, r->o, 1, size, &r->peer, &run);
    if (!err)
        err = rs_send(r, PERF_CMD_GO, NULL, 0);
    struct perf_ctl c;
    if (!err)
        err = rs_wait(r, run, PERF_CMD_END, &c);
    if (!err) {
        perf_run_end(run, c.v[0]);
        err = rs_drive(r, run);
    }
    if (run)
        perf_run_result(run, res);
    if (!err) {
        uint64_t v[6] = {(uint64_t)(res->check + 1), res->conn.retx_pkts,
                         res->conn.rx_ecn_ce,        res->conn.tx_data_pkts,
                         res->conn.rto_events,       res->dp.imp_lost};
        err = rs_send(r, PERF_CMD_RESULT, v, 6);
    }
    perf_run_free(run);
    return err;
}

#define SRV_MAX_RUNS 32 /* perf_sizes' most: -a */

/* RUNs until QUIT; res[0..*n) the results of the runs started. */
static int srv_loop(struct rs *r, struct perf_result *res, int *n)
{
    for (;;) {
        struct perf_ctl c;
        /* Keep the datapath going while the client thinks. */
        int err = rs_wait(r, NULL, PERF_CMD_RUN, &c);
        if (err == 1) /* QUIT */
            return 0;
        /* The buffer holds the sizes of the client's CONFIG, no other. */
        if (!err && !perf_size_ok(r->o, c.v[0])) {
            fprintf(stderr,
                    "mroce-perf: client asked for a %llu-byte run it did not "
                    "configure\n",
                    (unsigned long long)c.v[0]);
            err = MROCE_EPROTO;
        }
        if (!err && *n < SRV_MAX_RUNS)
            err = srv_size(r, c.v[0], &res[(*n)++]);
        else if (!err)
            err = MROCE_EPROTO;
        if (err)
            return err;
    }
}

enum srv_outcome { SRV_DONE, SRV_FAILED, SRV_REFUSED };

/* One client from set-up to QUIT, on its own copy of the options (its
 * CONFIG replaces the test, sizes and counts). SRV_REFUSED: the set-up
 * exchange refused it (R-CM-8: its CONFIG asked for too much, say). */
static int srv_session(const struct perf_opts *base, struct mroce_cm *cm)
{
    struct perf_opts o = *base;
    struct rs r = {.o = &o, .cm = cm};
    int err = rs_open(&r), n = 0;
    bool up = mroce_cm_security(cm, NULL, NULL) >= 0;
    struct perf_result res[SRV_MAX_RUNS];
    if (!err)
        err = srv_loop(&r, res, &n);
    if (n) /* --json: this side's counters of the last client's runs */
        perf_report_json(&o, res, n, NULL);
    rs_close(&r);
    if (err)
        fprintf(stderr, "mroce-perf: server: %s\n", rs_why(err));
    return !up ? SRV_REFUSED : err ? SRV_FAILED : SRV_DONE;
}

static void srv_summary(const struct perf_opts *o,
                        const struct mroce_cm_listener *l, int served,
                        int refused)
{
    struct mroce_cm_listener_counters c;
    mroce_cm_listener_get_counters(l, &c);
    if (o->quiet)
        return;
    printf("mroce-perf: served %d client(s); connectors dropped: %llu "
           "refused, %d refused in set-up, %llu not CM, %llu silent, %llu "
           "closed, %llu evicted\n",
           served, (unsigned long long)c.rejected, refused,
           (unsigned long long)c.dropped, (unsigned long long)c.timeouts,
           (unsigned long long)c.closed, (unsigned long long)c.evicted);
}

/* R-CM-13: serves clients one after another; a connector that fails the
 * CM's checks never counts, a client whose run fails does (and makes the
 * exit status 1) but does not stop the server. */
int perf_main_server(struct perf_opts *o)
{
    struct mroce_cm_attr a;
    perf_cm_attr(o, &a);
    a.check_blob = rs_check_blob;
    struct rs chk = {.o = o};
    a.ud = &chk; /* the limits are the server's own options */
    struct mroce_cm_listener *l;
    int err = mroce_cm_listen(o->local_ip, o->port, &a, &l);
    if (err) {
        fprintf(stderr, "mroce-perf: %s\n", mroce_cm_errmsg());
        return 1;
    }
    if (!o->quiet)
        printf("mroce-perf: waiting for a client on TCP port %u\n",
               mroce_cm_listener_port(l));
    fflush(stdout);
    int served = 0, failed = 0, refused = 0;
    while (!o->clients || served < o->clients) {
        struct mroce_cm *cm;
        err = mroce_cm_accept(l, o->clients ? o->timeout_s * 1000 : -1, &cm);
        if (err) {
            fprintf(stderr, "mroce-perf: %s\n", mroce_cm_errmsg());
            failed++;
            break;
        }
        int out = srv_session(o, cm);
        refused += out == SRV_REFUSED;
        failed += out == SRV_FAILED;
        served += out != SRV_REFUSED;
        fflush(stdout);
    }
    srv_summary(o, l, served, refused);
    mroce_cm_listener_close(l);
    return failed ? 1 : 0;
}
