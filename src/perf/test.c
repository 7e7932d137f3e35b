/* The tests as non-blocking state machines (see perf.h).
 *
 * Bandwidth: the active side keeps tx_depth work requests outstanding,
 * round robin over the streams, message k using slot k % slots of both
 * buffers. Latency: a ping-pong on stream 0; WRITE uses WRITE_IMM so the
 * receiver sees a completion once the whole message is placed (spraying
 * does not place bytes in order, so polling the last byte, as perftest
 * does on InfiniBand, would be wrong). Pings go from slot 1 of the sender
 * to slot 0 of the receiver. write_lat and send_lat report half the round
 * trip, read_lat the whole READ (perftest's convention). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

#define WIN_NS 10000000ull /* peak bandwidth window */
#define MAX_SAMPLES (1u << 22)

struct perf_run {
    struct perf_side *s;
    const struct perf_opts *o;
    int role, test;
    size_t size;
    uint32_t slots;
    struct perf_remote peer;
    uint64_t posted, done_tx, done_rx, recv_seq, peer_msgs, echo_pending;
    uint64_t t0, t1, t_end, t_ping;
    uint64_t win_t0, win_bytes, win_msgs;
    double peak_gbps;
    uint64_t *lat;
    uint64_t n_lat;
    bool stop, ended, waiting, started;
    int err, check;
    struct mroce_conn_counters c0;
    struct mroce_ctx_counters x0;
    struct mroce_dp_counters d0;
};

static bool run_needs_recv(const struct perf_run *r)
{
    if (r->test == PERF_SEND_BW)
        return r->role == 1;
    return r->test == PERF_WRITE_LAT || r->test == PERF_SEND_LAT;
}

static bool run_is_bw(const struct perf_run *r)
{
    return !perf_test_is_lat(r->test);
}

/* ---- Posting ---- */

static int run_post_recv(struct perf_run *r, uint16_t stream)
{
    struct perf_side *s = r->s;
    uint32_t slot = r->test == PERF_SEND_BW ? r->recv_seq % r->slots : 0;
    struct mroce_recv_wr wr = {.wr_id = slot, .stream = stream};
    if (r->test != PERF_WRITE_LAT) /* WRITE_IMM places nothing there */
        wr.sge =
            (struct mroce_sge){(uint64_t)(uintptr_t)(s->buf + slot * r->size),
                               (uint32_t)r->size, mroce_mr_lkey(s->mr)};
    int err = mroce_post_recv(s->conn, &wr);
    if (!err)
        r->recv_seq++;
    return err;
}

/* Message k: local slot and remote slot of a bandwidth test; pings of the
 * latency tests go from slot 1 to the peer's slot 0 (READ: 0 to 0). */
static void run_wr(struct perf_run *r, uint64_t k, struct mroce_send_wr *wr)
{
    size_t lo = (k % r->slots) * r->size, ro = lo;
    if (r->test == PERF_SEND_BW)
        lo = 0;
    if (!run_is_bw(r))
        lo = r->test == PERF_READ_LAT ? 0 : r->size, ro = 0;
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = k;
    wr->stream = run_is_bw(r) ? (uint16_t)(k % r->o->streams) : 0;
    wr->sge.addr = (uint64_t)(uintptr_t)(r->s->buf + lo);
    wr->sge.length = (uint32_t)r->size;
    wr->sge.lkey = mroce_mr_lkey(r->s->mr);
    wr->remote_addr = r->peer.addr + ro;
    wr->rkey = r->peer.rkey;
}

static int run_post_one(struct perf_run *r)
{
    struct mroce_send_wr wr;
    run_wr(r, r->posted, &wr);
    struct mroce_conn *c = r->s->conn;
    switch (r->test) {
    case PERF_WRITE_BW:
        return mroce_post_write(c, &wr);
    case PERF_WRITE_LAT:
        return mroce_post_write_imm(c, &wr);
    case PERF_READ_BW:
    case PERF_READ_LAT:
        return mroce_post_read(c, &wr);
    default:
        return mroce_post_send(c, &wr);
    }
}

static int run_post(struct perf_run *r)
{
    int err = run_post_one(r);
    if (err)
        return err == MROCE_EAGAIN ? 0 : err;
    if (!r->started) {
        r->started = true;
        r->t0 = r->win_t0 = mroce_dp_now_ns();
        if (r->o->duration > 0)
            r->t_end = r->t0 + (uint64_t)(r->o->duration * 1e9);
    }
    r->posted++;
    return 1;
}

static void run_check_stop(struct perf_run *r, uint64_t now)
{
    uint64_t n = r->role ? r->done_rx : r->posted;
    if (r->t_end ? now >= r->t_end : n >= r->o->iters)
        r->stop = true;
}

/* ---- Completions ---- */

static void run_on_tx(struct perf_run *r, uint64_t now)
{
    r->done_tx++;
    r->t1 = now;
    if (r->test == PERF_READ_LAT && r->role == 0) {
        if (r->n_lat < MAX_SAMPLES)
            r->lat[r->n_lat++] = now - r->t_ping;
        r->waiting = false;
    }
    r->win_bytes += r->size;
    if (++r->win_msgs >= 8 && now - r->win_t0 >= WIN_NS) {
        double g = (double)r->win_bytes * 8 / (double)(now - r->win_t0);
        if (g > r->peak_gbps)
            r->peak_gbps = g;
        r->win_t0 = now;
        r->win_bytes = r->win_msgs = 0;
    }
}

static bool run_recv_ok(const struct perf_run *r, const struct mroce_wc *wc)
{
    if (wc->byte_len != r->size)
        return false;
    if (!r->o->check || r->test != PERF_SEND_BW)
        return true;
    const uint8_t *b = r->s->buf + wc->wr_id * r->size;
    for (size_t i = 0; i < r->size; i++)
        if (b[i] != perf_pattern(0, i))
            return false;
    return true;
}

static int run_on_rx(struct perf_run *r, const struct mroce_wc *wc,
                     uint64_t now)
{
    r->done_rx++;
    if (!run_recv_ok(r, wc))
        r->check = -1;
    if (r->role == 0) { /* the pong */
        if (r->n_lat < MAX_SAMPLES)
            r->lat[r->n_lat++] = (now - r->t_ping) / 2;
        r->waiting = false;
    } else if (!run_is_bw(r)) {
        r->echo_pending++; /* posted by run_echo */
    }
    return run_post_recv(r, wc->stream);
}

static int run_on_wc(struct perf_run *r, const struct mroce_wc *wc,
                     uint64_t now)
{
    if (wc->status != MROCE_WC_SUCCESS) {
        fprintf(stderr,
                "mroce-perf: completion of wr %llu failed: %s "
                "(connection %s)\n",
                (unsigned long long)wc->wr_id, mroce_wc_status_str(wc->status),
                mroce_conn_state_str(mroce_conn_state(r->s->conn)));
        struct mroce_conn_counters c;
        mroce_conn_get_counters(r->s->conn, &c);
        fprintf(
            stderr,
            "  tx %llu rx %llu data tx %llu retx %llu rto %llu "
            "nacks rx %llu tx %llu bad_key %llu bad_bounds %llu "
            "state %llu\n",
            (unsigned long long)c.tx_pkts, (unsigned long long)c.rx_pkts,
            (unsigned long long)c.tx_data_pkts, (unsigned long long)c.retx_pkts,
            (unsigned long long)c.rto_events, (unsigned long long)c.rx_nacks,
            (unsigned long long)c.tx_nacks, (unsigned long long)c.drop_bad_key,
            (unsigned long long)c.drop_bad_bounds,
            (unsigned long long)c.drop_state);
        return MROCE_EPROTO;
    }
    if (wc->opcode == MROCE_WC_RECV ||
        wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM)
        return run_on_rx(r, wc, now);
    run_on_tx(r, now);
    return 0;
}

static int run_poll(struct perf_run *r)
{
    struct mroce_wc wc[32];
    int n = mroce_poll_cq(r->s->cq, 32, wc);
    uint64_t now = n > 0 ? mroce_dp_now_ns() : 0;
    for (int i = 0; i < n; i++) {
        int err = run_on_wc(r, &wc[i], now);
        if (err)
            return err;
    }
    return n;
}

/* ---- The step ---- */

static int run_active(struct perf_run *r)
{
    uint64_t now = mroce_dp_now_ns();
    if (r->started)
        run_check_stop(r, now);
    if (run_is_bw(r)) {
        while (!r->stop && r->posted - r->done_tx < r->o->tx_depth) {
            int rc = run_post(r);
            if (rc <= 0)
                return rc;
            run_check_stop(r, now);
        }
        return 0;
    }
    if (r->stop || r->waiting)
        return 0;
    r->t_ping = now;
    int rc = run_post(r);
    if (rc > 0)
        r->waiting = true;
    return rc < 0 ? rc : 0;
}

static int run_echo(struct perf_run *r)
{
    while (r->echo_pending) {
        int rc = run_post(r);
        if (rc <= 0)
            return rc;
        r->echo_pending--;
    }
    return 0;
}

int perf_run_step(struct perf_run *r)
{
    if (r->err)
        return r->err;
    int err = run_poll(r);
    if (err >= 0)
        err = r->role == 0 ? run_active(r) : run_echo(r);
    if (err < 0)
        return r->err = err;
    if (r->role == 0)
        return r->stop && r->done_tx == r->posted && !r->waiting;
    return r->ended && r->done_tx == r->posted;
}

void perf_run_end(struct perf_run *r, uint64_t peer_msgs)
{
    r->ended = true;
    r->peer_msgs = peer_msgs;
}

static int run_prepost(struct perf_run *r)
{
    if (!run_needs_recv(r))
        return 0;
    uint16_t ns = r->test == PERF_SEND_BW ? r->o->streams : 1;
    for (uint16_t st = 0; st < ns; st++)
        for (uint32_t i = 0; i < r->s->depth; i++) {
            int err = run_post_recv(r, st);
            if (err)
                return err;
        }
    return 0;
}

int perf_run_create(struct perf_side *s, const struct perf_opts *o, int role,
                    size_t size, const struct perf_remote *peer,
                    struct perf_run **out)
{
    /* Every slot of this size must lie in both buffers: the sizes come
     * from the peer (RUN), the buffers from our CONFIG. */
    if (!size || (size_t)perf_slots(size) * size > s->buf_len ||
        (size_t)perf_slots(size) * size > peer->len)
        return MROCE_EINVAL;
    struct perf_run *r = calloc(1, sizeof(*r));
    if (!r)
        return MROCE_ENOMEM;
    r->s = s, r->o = o, r->role = role, r->test = o->test, r->size = size;
    r->slots = perf_slots(size);
    r->peer = *peer;
    if (o->check)
        perf_side_fill(s, role);
    mroce_conn_get_counters(s->conn, &r->c0);
    mroce_ctx_get_counters(s->ctx, &r->x0);
    mroce_dp_get_counters(s->dp, &r->d0);
    uint64_t cap = o->iters < MAX_SAMPLES ? o->iters : MAX_SAMPLES;
    if (!run_is_bw(r) && role == 0 &&
        !(r->lat = calloc(o->duration > 0 ? MAX_SAMPLES : cap + 1,
                          sizeof(uint64_t)))) {
        free(r);
        return MROCE_ENOMEM;
    }
    int err = run_prepost(r);
    if (err) {
        perf_run_free(r);
        return err;
    }
    *out = r;
    return 0;
}

void perf_run_free(struct perf_run *r)
{
    if (!r)
        return;
    free(r->lat);
    free(r);
}

/* ---- Results ---- */

static void run_delta(uint64_t *out, const uint64_t *now, const uint64_t *then,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = now[i] - then[i];
}

#define RUN_DELTA(out, now, then)                                              \
    run_delta((uint64_t *)(void *)&(out), (const uint64_t *)(void *)&(now),    \
              (const uint64_t *)(void *)&(then),                               \
              sizeof(out) / sizeof(uint64_t))

static void run_counters(const struct perf_run *r, struct perf_result *res)
{
    struct mroce_conn_counters c;
    struct mroce_ctx_counters x;
    struct mroce_dp_counters d;
    mroce_conn_get_counters(r->s->conn, &c);
    mroce_ctx_get_counters(r->s->ctx, &x);
    mroce_dp_get_counters(r->s->dp, &d);
    RUN_DELTA(res->conn, c, r->c0);
    RUN_DELTA(res->ctx, x, r->x0);
    RUN_DELTA(res->dp, d, r->d0);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void perf_lat_stats(uint64_t *lat, uint64_t n, struct perf_result *res)
{
    if (!n)
        return;
    qsort(lat, n, sizeof(uint64_t), cmp_u64);
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    uint64_t p99 = (n * 99) / 100 < n ? (n * 99) / 100 : n - 1;
    res->t_min_us = (double)lat[0] / 1e3;
    res->t_typical_us = (double)lat[n / 2] / 1e3;
    res->t_p99_us = (double)lat[p99] / 1e3;
    res->t_max_us = (double)lat[n - 1] / 1e3;
    res->t_avg_us = sum / (double)n / 1e3;
}

/* Bytes [0, n) of the buffer hold side who's pattern from offset `from`;
 * a span beyond the buffer is a mismatch, never a read past it. */
static int run_cmp(const struct perf_run *r, size_t n, int who, size_t from)
{
    if (n > r->s->buf_len)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (r->s->buf[i] != perf_pattern(who, from + i))
            return -1;
    return 1;
}

static int run_verify(const struct perf_run *r)
{
    uint64_t msgs = r->role ? r->peer_msgs : r->posted;
    size_t used = (size_t)(msgs < r->slots ? msgs : r->slots) * r->size;
    if (r->check < 0)
        return -1;
    switch (r->test) {
    case PERF_WRITE_BW:
        return r->role ? run_cmp(r, used, 0, 0) : 0;
    case PERF_READ_BW:
        return r->role ? 0 : run_cmp(r, used, 1, 0);
    case PERF_SEND_BW:
        return r->role ? 1 : 0;
    case PERF_READ_LAT:
        return r->role ? 0 : run_cmp(r, r->size, 1, 0);
    default: /* write_lat, send_lat: the peer's slot 1 in my slot 0 */
        return run_cmp(r, r->size, !r->role, r->size);
    }
}

void perf_run_result(struct perf_run *r, struct perf_result *res)
{
    memset(res, 0, sizeof(*res));
    res->size = r->size;
    res->iters =
        r->role ? (r->done_rx ? r->done_rx : r->peer_msgs) : r->done_tx;
    uint64_t t1 = r->t1 > r->t0 ? r->t1 : mroce_dp_now_ns();
    res->secs = r->started ? (double)(t1 - r->t0) / 1e9 : 0;
    if (res->secs > 0) {
        double bytes = (double)r->done_tx * (double)r->size;
        res->bw_avg_gbps = bytes * 8 / res->secs / 1e9;
        res->msg_rate_mpps = (double)r->done_tx / res->secs / 1e6;
    }
    res->bw_peak_gbps =
        r->peak_gbps > res->bw_avg_gbps ? r->peak_gbps : res->bw_avg_gbps;
    perf_lat_stats(r->lat, r->n_lat, res);
    res->check = r->o->check ? run_verify(r) : 0;
    run_counters(r, res);
}
