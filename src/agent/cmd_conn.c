/* Agent commands on connections: create and connect with parameter blocks,
 * state, disconnect, destroy, work requests, completions, counters and the
 * path extensions (docs/conformance.md, "Commands"). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "engine/fault.h"

/* ---- parameter blocks (R-CONN-3) ---- */

static void agent_addr_str(const struct mroce_addr *a, char *out, size_t cap)
{
    if (a->family == MROCE_AF_INET6) {
        size_t n = 0;
        for (int i = 0; i < 16 && n < cap; i += 2)
            n += (size_t)snprintf(out + n, cap - n, "%s%x", i ? ":" : "",
                                  (unsigned)(a->ip[i] << 8 | a->ip[i + 1]));
        return;
    }
    snprintf(out, cap, "%u.%u.%u.%u", a->ip[0], a->ip[1], a->ip[2], a->ip[3]);
}

static json_t *agent_addrs_json(const struct mroce_conn_params *p)
{
    json_t *arr = json_array();
    char addr[64];
    int n = p->n_planes ? p->n_planes : 1;
    for (int i = 0; i < n; i++) {
        agent_addr_str(p->n_planes ? &p->plane_addr[i] : &p->addr, addr,
                       sizeof(addr));
        json_array_append_new(arr, json_string(addr));
    }
    return arr;
}

/* R-CONN-3: every value an endpoint announces. */
json_t *agent_params_json(const struct mroce_conn_params *p)
{
    json_t *o = json_pack(
        "{s:i, s:I, s:I, s:I, s:I, s:o, s:i, s:i, s:i, s:I, s:I, s:I, s:I}",
        "version", 1, "conn_id", (json_int_t)p->conn_id, "init_psn",
        (json_int_t)p->init_psn, "init_dsn", (json_int_t)p->init_dsn,
        "init_msn", (json_int_t)p->init_msn, "addrs", agent_addrs_json(p),
        "udp_port", p->udp_port, "n_paths", p->n_paths, "n_streams",
        p->n_streams, "mtu", (json_int_t)p->mtu, "dsn_window",
        (json_int_t)p->dsn_window, "msg_window", (json_int_t)p->msg_window,
        "max_rd", (json_int_t)p->max_rd);
    json_t *tm = json_pack(
        "{s:i, s:i, s:I, s:I, s:I, s:i, s:i, s:I}", "path_window",
        p->path_window, "ack_every", p->ack_every, "ack_delay_ns",
        (json_int_t)p->ack_delay_ns, "min_rto_ns", (json_int_t)p->min_rto_ns,
        "max_rto_ns", (json_int_t)p->max_rto_ns, "retry_cnt", p->retry_cnt,
        "rnr_retry", p->rnr_retry, "rnr_max_us", (json_int_t)p->rnr_max_us);
    json_object_update(o, tm);
    json_decref(tm);
    /* R-VER-5, R-ACKM-1: the features it supports (the set-up exchange's
     * features field, here carried in the block) */
    json_object_set_new(o, "features", json_integer(p->features));
    return o;
}

static bool agent_u32(json_t *j, const char *k, uint32_t *out)
{
    int64_t v;
    if (!json_object_get(j, k) || !agent_get_int(j, k, 0, 0, UINT32_MAX, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* A value that may be absent (0: not announced). */
static bool agent_opt_u64(json_t *j, const char *k, uint64_t max, uint64_t *out)
{
    return agent_get_u64(j, k, 0, out) && *out <= max;
}

static bool agent_addrs_parse(json_t *j, struct mroce_conn_params *p)
{
    json_t *addrs = json_object_get(j, "addrs");
    size_t n = json_array_size(addrs);
    if (!json_is_array(addrs) || n < 1 || n > MROCE_MAX_PLANES)
        return false;
    for (size_t i = 0; i < n; i++)
        if (mroce_addr_parse(json_string_value(json_array_get(addrs, i)),
                             &p->plane_addr[i]))
            return false;
    p->addr = p->plane_addr[0];
    p->n_planes = (uint8_t)n;
    return true;
}

static bool agent_timing_parse(json_t *j, struct mroce_conn_params *p)
{
    uint64_t v[8];
    static const char *const keys[] = {
        "path_window", "ack_every", "ack_delay_ns", "min_rto_ns",
        "max_rto_ns",  "retry_cnt", "rnr_retry",    "rnr_max_us"};
    static const uint64_t max[] = {65535,      65535, UINT32_MAX, UINT64_MAX,
                                   UINT64_MAX, 255,   255,        UINT32_MAX};
    for (int i = 0; i < 8; i++)
        if (!agent_opt_u64(j, keys[i], max[i], &v[i]))
            return false;
    p->path_window = (uint16_t)v[0];
    p->ack_every = (uint16_t)v[1];
    p->ack_delay_ns = (uint32_t)v[2];
    p->min_rto_ns = v[3];
    p->max_rto_ns = v[4];
    p->retry_cnt = (uint8_t)v[5];
    p->rnr_retry = (uint8_t)v[6];
    p->rnr_max_us = (uint32_t)v[7];
    return true;
}

/* Fields the engine cannot represent (a version other than 1, values
 * beyond their fields) make the block invalid: R-CONN-4 refuses. */
bool agent_params_parse(json_t *j, struct mroce_conn_params *p)
{
    memset(p, 0, sizeof(*p));
    uint32_t v[12];
    static const char *const keys[] = {"conn_id",    "udp_port", "n_paths",
                                       "n_streams",  "mtu",      "dsn_window",
                                       "msg_window", "max_rd",   "version",
                                       "init_psn",   "init_dsn", "init_msn"};
    for (int i = 0; i < 12; i++) {
        if (i >= 9 && !json_object_get(j, keys[i]))
            v[i] = 0; /* an initial sequence number not given: 0 */
        else if (!agent_u32(j, keys[i], &v[i]))
            return false;
    }
    if (v[8] != 1 || v[1] > 65535 || v[2] > 65535 || v[3] > 65535 ||
        !agent_addrs_parse(j, p) || !agent_timing_parse(j, p))
        return false;
    p->conn_id = v[0];
    p->udp_port = (uint16_t)v[1];
    p->n_paths = (uint16_t)v[2];
    p->n_streams = (uint16_t)v[3];
    p->mtu = v[4];
    p->dsn_window = v[5];
    p->msg_window = v[6];
    p->max_rd = v[7];
    p->init_psn = v[9];
    p->init_dsn = v[10];
    p->init_msn = v[11];
    uint64_t feat; /* absent: the peer announces no feature (R-VER-5) */
    if (!agent_opt_u64(j, "features", UINT32_MAX, &feat))
        return false;
    p->features = (uint32_t)feat;
    return true;
}

/* ---- create, connect, state, disconnect, destroy ---- */

struct agent_key {
    const char *name;
    int64_t lo, hi;
};

/* Connection attributes the request may set (mroce_conn_attr names). */
static const struct agent_key agent_attr_keys[] = {
    {"n_streams", 0, 65535},
    {"n_paths", 0, 65535},
    {"sq_depth", 0, UINT32_MAX},
    {"rq_depth", 0, UINT32_MAX},
    {"dsn_window", 0, UINT32_MAX},
    {"path_window", 0, UINT32_MAX},
    {"max_rd", 0, UINT32_MAX},
    {"retry_cnt", 0, 255},
    {"rnr_retry", 0, 255},
    {"min_rto_ns", 0, INT64_MAX},
    {"max_rto_ns", 0, INT64_MAX},
    {"ack_every", 0, UINT32_MAX},
    {"ack_delay_ns", 0, INT64_MAX},
    {"init_cwnd_pkts", 0, UINT32_MAX},
    {"max_conn_cwnd_pkts", 0, UINT32_MAX},
    {"tail_copies", 0, 255},
    {"ackm_off", 0, 1},
};

static bool agent_conn_attr(json_t *req, struct mroce_conn_attr *at)
{
    int64_t v[17];
    for (int i = 0; i < 17; i++)
        if (!agent_get_int(req, agent_attr_keys[i].name, 0,
                           agent_attr_keys[i].lo, agent_attr_keys[i].hi, &v[i]))
            return false;
    *at = (struct mroce_conn_attr){
        .n_streams = (uint16_t)v[0],
        .n_paths = (uint16_t)v[1],
        .sq_depth = (uint32_t)v[2],
        .rq_depth = (uint32_t)v[3],
        .dsn_window = (uint32_t)v[4],
        .path_window = (uint32_t)v[5],
        .max_rd = (uint32_t)v[6],
        .retry_cnt = (uint8_t)v[7],
        .rnr_retry = (uint8_t)v[8],
        .min_rto_ns = (uint64_t)v[9],
        .max_rto_ns = (uint64_t)v[10],
        .ack_every = (uint32_t)v[11],
        .ack_delay_ns = (uint64_t)v[12],
        .init_cwnd_pkts = (uint32_t)v[13],
        .max_conn_cwnd_pkts = (uint32_t)v[14],
        .tail_copies = (uint8_t)v[15],
        .ackm_off = (uint8_t)v[16],
    };
    return true;
}

#define DEF(v, d) ((v) ? (v) : (d))

/* The local values the peer's behaviour depends on (mroce defaults for
 * zero fields; docs/conformance.md, "timers"). */
static json_t *agent_timers(const struct mroce_conn_attr *at)
{
    uint64_t min_rto = DEF(at->min_rto_ns, 100000);
    uint64_t max_rto = DEF(at->max_rto_ns, 100000000);
    uint64_t init_rto = 5 * min_rto < max_rto ? 5 * min_rto : max_rto;
    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i}", "ack_delay_ns",
        (json_int_t)DEF(at->ack_delay_ns, 2000), "ack_every",
        (json_int_t)DEF(at->ack_every, 1), "min_rto_ns", (json_int_t)min_rto,
        "max_rto_ns", (json_int_t)max_rto, "initial_rto_ns",
        (json_int_t)init_rto, "retry_cnt", DEF(at->retry_cnt, 7), "rnr_retry",
        DEF(at->rnr_retry, 7), "rnr_delay_us", 100, "path_window",
        DEF(at->path_window, 256), "max_tx_per_dsn", 64);
}

/* Test hook (capability conn.init_seq): fixed initial sequence numbers
 * instead of random ones, for wrap tests. */
static void agent_init_seq(struct mroce_conn *c, json_t *req)
{
    uint64_t psn, dsn, msn;
    if (!json_object_get(req, "init_psn") ||
        !agent_get_u64(req, "init_psn", 0, &psn) ||
        !agent_get_u64(req, "init_dsn", 0, &dsn) ||
        !agent_get_u64(req, "init_msn", 0, &msn))
        return;
    mroce_conn_set_init_seq(c, (uint32_t)psn, (uint32_t)dsn, (uint32_t)msn);
}

static int agent_cqs(struct agent_ctx *x, struct agent_conn *c, int64_t depth)
{
    int rc = mroce_cq_create(x->ctx, (uint32_t)depth, &c->scq);
    if (rc == 0 && (rc = mroce_cq_create(x->ctx, (uint32_t)depth, &c->rcq)))
        mroce_cq_destroy(c->scq);
    return rc;
}

json_t *agent_cmd_conn_create(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_ctx *x = agent_ctx_get(a, req, &err);
    if (!x)
        return err;
    struct mroce_conn_attr at;
    int64_t depth;
    if (!agent_conn_attr(req, &at) ||
        !agent_get_int(req, "cq_depth", 1 << 16, 1, 1 << 22, &depth))
        return agent_err("invalid", "bad connection attributes");
    int h = agent_conn_new(a);
    if (h < 0)
        return agent_err("nomem", "too many connections");
    struct agent_conn *c = &a->conn[h];
    c->ctx = (int)(x - a->ctx);
    struct mroce_conn_params p;
    mroce_dp_lock(x->dp);
    int rc = agent_cqs(x, c, depth);
    if (rc == 0) {
        at.send_cq = c->scq;
        at.recv_cq = c->rcq;
        if ((rc = mroce_conn_create(x->pd, &at, &c->conn)) < 0) {
            mroce_cq_destroy(c->scq);
            mroce_cq_destroy(c->rcq);
        } else {
            agent_init_seq(c->conn, req);
            mroce_conn_get_params(c->conn, &p);
        }
    }
    mroce_dp_unlock(x->dp);
    if (rc < 0) {
        c->used = false;
        return agent_err_rc(rc, "mroce_conn_create");
    }
    return json_pack("{s:b, s:i, s:o, s:o}", "ok", 1, "conn", h + 1, "params",
                     agent_params_json(&p), "timers", agent_timers(&at));
}

json_t *agent_cmd_conn_connect(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    struct mroce_conn_params p;
    if (!agent_params_parse(json_object_get(req, "params"), &p))
        return agent_err("invalid", "bad or unsupported parameter block");
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = mroce_conn_connect(c->conn, &p);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return rc < 0 ? agent_err_rc(rc, "mroce_conn_connect") : agent_ok();
}

json_t *agent_cmd_conn_state(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int st = mroce_conn_state(c->conn);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return json_pack("{s:b, s:s}", "ok", 1, "state", mroce_conn_state_str(st));
}

json_t *agent_cmd_conn_disconnect(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = mroce_conn_disconnect(c->conn);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return rc < 0 ? agent_err_rc(rc, "mroce_conn_disconnect") : agent_ok();
}

json_t *agent_cmd_conn_destroy(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    agent_conn_free(a, (int)(c - a->conn));
    return agent_ok();
}

#define CNT(o, name, v)                                                        \
    json_object_set_new(o, name, json_integer((json_int_t)(v)))

/* Section 10.2's names (and a few of mroce's own) for the connection. */
static json_t *agent_conn_cnt_json(const struct mroce_conn_counters *k)
{
    json_t *o = json_object();
    CNT(o, "rx_pkts", k->rx_pkts);
    CNT(o, "tx_pkts", k->tx_pkts);
    CNT(o, "data_tx", k->tx_data_pkts);
    CNT(o, "data_rx", k->rx_data_pkts);
    CNT(o, "retx", k->retx_pkts);
    CNT(o, "tlp", k->tlp_pkts);
    CNT(o, "rto", k->rto_events);
    CNT(o, "ack_tx", k->tx_acks);
    CNT(o, "ack_rx", k->rx_acks);
    CNT(o, "ackm_recs_tx", k->tx_ackm_recs);
    CNT(o, "ackm_recs_rx", k->rx_ackm_recs);
    CNT(o, "nack_tx", k->tx_nacks);
    CNT(o, "nack_rx", k->rx_nacks);
    CNT(o, "rnr_tx", k->rnr_naks);
    CNT(o, "dup", k->rx_dup_pkts);
    CNT(o, "ce_rx", k->rx_ecn_ce);
    CNT(o, "bad_path", k->drop_bad_path);
    CNT(o, "dsn_window", k->drop_dsn_window);
    CNT(o, "msn_window", k->drop_msn_window);
    CNT(o, "bad_key", k->drop_bad_key);
    CNT(o, "bad_bounds", k->drop_bad_bounds);
    CNT(o, "bad_access", k->drop_bad_access);
    CNT(o, "bad_msg", k->drop_bad_msg);
    CNT(o, "state", k->drop_state);
    CNT(o, "stale", k->drop_stale);
    CNT(o, "bad_ack", k->drop_bad_ack);
    CNT(o, "repaths", k->repaths);
    CNT(o, "msgs_tx", k->msgs_tx);
    CNT(o, "msgs_rx", k->msgs_rx);
    CNT(o, "lost_sack", k->lost_sack);
    CNT(o, "lost_rack", k->lost_rack);
    CNT(o, "lost_pto", k->lost_pto);
    CNT(o, "lost_rto", k->lost_rto);
    CNT(o, "lost_rnr", k->lost_rnr);
    CNT(o, "bad_tag", k->drop_bad_tag);
    CNT(o, "replay", k->drop_replay);
    CNT(o, "sec_mode", k->drop_sec_mode);
    CNT(o, "psn_window", k->drop_psn_window);
    CNT(o, "bad_close", k->drop_bad_close);
    CNT(o, "resync", k->psn_resyncs);
    CNT(o, "rnr_capped", k->rnr_capped);
    return o;
}

json_t *agent_cmd_conn_counters(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    struct mroce_conn_counters k;
    mroce_dp_lock(agent_dp_of_conn(a, c));
    mroce_conn_get_counters(c->conn, &k);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return json_pack("{s:b, s:o}", "ok", 1, "counters",
                     agent_conn_cnt_json(&k));
}

/* ---- work requests ---- */

enum agent_op {
    OP_WRITE,
    OP_WRITE_IMM,
    OP_SEND,
    OP_SEND_IMM,
    OP_READ,
    OP_RECV
};

static int agent_op_of(const char *s)
{
    static const char *const names[] = {"write",    "write_imm", "send",
                                        "send_imm", "read",      "recv"};
    for (int i = 0; s && i < 6; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* The local buffer [mr + offset, + len); len 0 needs no region. */
static json_t *agent_sge(struct agent *a, json_t *req, struct mroce_sge *sge)
{
    int64_t off, len;
    if (!agent_get_int(req, "len", 0, 0, UINT32_MAX, &len) ||
        !agent_get_int(req, "offset", 0, 0, INT64_MAX, &off))
        return agent_err("invalid", "bad offset or len");
    *sge = (struct mroce_sge){.length = (uint32_t)len};
    if (!json_object_get(req, "mr"))
        return len ? agent_err("invalid", "a buffer needs mr") : NULL;
    json_t *err;
    struct agent_mr *m = agent_mr_get(a, req, &err);
    if (!m)
        return err;
    if ((uint64_t)off + (uint64_t)len > m->len || !m->mr)
        return agent_err("range", "buffer outside the region");
    sge->addr = (uint64_t)(uintptr_t)(m->buf + off);
    sge->lkey = mroce_mr_lkey(m->mr);
    return NULL;
}

static int agent_post_op(struct mroce_conn *c, int op,
                         const struct mroce_send_wr *wr)
{
    switch (op) {
    case OP_WRITE:
        return mroce_post_write(c, wr);
    case OP_WRITE_IMM:
        return mroce_post_write_imm(c, wr);
    case OP_SEND:
        return mroce_post_send(c, wr);
    case OP_SEND_IMM:
        return mroce_post_send_imm(c, wr);
    case OP_READ:
        return mroce_post_read(c, wr);
    default: {
        struct mroce_recv_wr r = {
            .wr_id = wr->wr_id, .stream = wr->stream, .sge = wr->sge};
        return mroce_post_recv(c, &r);
    }
    }
}

json_t *agent_cmd_post(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    int op = agent_op_of(agent_get_str(req, "op", NULL));
    int64_t stream, imm, rkey;
    struct mroce_send_wr wr = {0};
    if (op < 0 || !agent_get_u64(req, "wr_id", 0, &wr.wr_id) ||
        !agent_get_int(req, "stream", 0, 0, 65535, &stream) ||
        !agent_get_u64(req, "remote_addr", 0, &wr.remote_addr) ||
        !agent_get_int(req, "rkey", 0, 0, UINT32_MAX, &rkey) ||
        !agent_get_int(req, "imm", 0, 0, UINT32_MAX, &imm))
        return agent_err("invalid", "bad work request");
    if ((err = agent_sge(a, req, &wr.sge)))
        return err;
    wr.stream = (uint16_t)stream;
    wr.rkey = (uint32_t)rkey;
    wr.imm = (uint32_t)imm;
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = agent_post_op(c->conn, op, &wr);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return rc < 0 ? agent_err_rc(rc, "post") : agent_ok();
}

/* ---- completions ---- */

static const char *agent_wc_opcode(int op)
{
    static const char *const names[] = {"send", "write", "read", "recv",
                                        "recv_imm"};
    return op >= 0 && op <= MROCE_WC_RECV_RDMA_WITH_IMM ? names[op] : "?";
}

/* The statuses of spec section 8 (FLUSH_ERR for mroce's WR_FLUSH_ERR). */
static const char *agent_wc_status(int st)
{
    return st == MROCE_WC_WR_FLUSH_ERR ? "FLUSH_ERR" : mroce_wc_status_str(st);
}

static json_t *agent_wc_json(const struct mroce_wc *w, const char *cq)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:i, s:I}", "wr_id",
                          (json_int_t)w->wr_id, "cq", cq, "status",
                          agent_wc_status(w->status), "opcode",
                          agent_wc_opcode(w->opcode), "stream", w->stream,
                          "byte_len", (json_int_t)w->byte_len);
    if (w->has_imm)
        json_object_set_new(o, "imm", json_integer(w->imm));
    return o;
}

static int agent_poll_once(struct agent *a, struct agent_conn *c, bool snd,
                           bool rcv, int max, json_t *out)
{
    struct mroce_wc wc[64];
    int got = 0;
    mroce_dp_lock(agent_dp_of_conn(a, c));
    for (int pass = 0; pass < 2; pass++) {
        if (!(pass ? rcv : snd))
            continue;
        int want = max - got < 64 ? max - got : 64;
        int n = want > 0 ? mroce_poll_cq(pass ? c->rcq : c->scq, want, wc) : 0;
        for (int i = 0; i < n; i++)
            json_array_append_new(
                out, agent_wc_json(&wc[i], pass ? "recv" : "send"));
        got += n;
    }
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return got;
}

json_t *agent_cmd_poll(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    const char *cq = agent_get_str(req, "cq", "both");
    int64_t max, wait_ms;
    if (!agent_get_int(req, "max", 64, 1, 4096, &max) ||
        !agent_get_int(req, "wait_ms", 0, 0, 60000, &wait_ms) ||
        (strcmp(cq, "send") && strcmp(cq, "recv") && strcmp(cq, "both")))
        return agent_err("invalid", "bad poll request");
    bool snd = strcmp(cq, "recv") != 0, rcv = strcmp(cq, "send") != 0;
    json_t *out = json_array();
    struct timespec nap = {0, 100000};
    for (int64_t left = wait_ms * 10;; left--) {
        if (agent_poll_once(a, c, snd, rcv, (int)max, out) > 0 || left <= 0)
            break;
        nanosleep(&nap, NULL);
    }
    return json_pack("{s:b, s:o}", "ok", 1, "wc", out);
}

/* ---- paths (R-PATH-12) ---- */

static bool agent_path_arg(json_t *req, uint16_t *path)
{
    int64_t p;
    if (!agent_get_int(req, "path", -1, 0, 65535, &p) || p < 0)
        return false;
    *path = (uint16_t)p;
    return true;
}

json_t *agent_cmd_path_info(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    uint16_t p;
    if (!c)
        return err;
    if (!agent_path_arg(req, &p))
        return agent_err("invalid", "path_info needs path");
    struct mroce_path_info pi;
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = mroce_path_query(c->conn, p, &pi);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    if (rc < 0)
        return agent_err_rc(rc, "mroce_path_query");
    json_t *o = json_object();
    json_object_set_new(o, "state",
                        json_string(mroce_path_state_str(pi.state)));
    CNT(o, "src_port", pi.src_port);
    CNT(o, "srtt_ns", pi.srtt_ns);
    CNT(o, "min_rtt_ns", pi.min_rtt_ns);
    CNT(o, "rto_ns", pi.rto_ns);
    CNT(o, "cwnd_bytes", pi.cwnd_bytes);
    CNT(o, "inflight_bytes", pi.inflight_bytes);
    CNT(o, "tx_pkts", pi.tx_pkts);
    CNT(o, "retx_pkts", pi.retx_pkts);
    CNT(o, "acked_pkts", pi.acked_pkts);
    CNT(o, "lost_pkts", pi.lost_pkts);
    CNT(o, "ecn_marks", pi.ecn_marks);
    CNT(o, "timeouts", pi.timeouts);
    CNT(o, "repaths", pi.repaths);
    CNT(o, "probes", pi.probes);
    return json_pack("{s:b, s:o}", "ok", 1, "path", o);
}

json_t *agent_cmd_path_repath(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    uint16_t p;
    if (!c)
        return err;
    if (!agent_path_arg(req, &p))
        return agent_err("invalid", "path_repath needs path");
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = mroce_path_repath(c->conn, p);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return rc < 0 ? agent_err_rc(rc, "mroce_path_repath") : agent_ok();
}

json_t *agent_cmd_path_enable(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    uint16_t p;
    int64_t on;
    if (!c)
        return err;
    if (!agent_path_arg(req, &p) || !agent_get_int(req, "on", 1, 0, 1, &on))
        return agent_err("invalid", "path_enable needs path and on");
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = mroce_path_enable(c->conn, p, (int)on);
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    return rc < 0 ? agent_err_rc(rc, "mroce_path_enable") : agent_ok();
}

/* ---- secure modes (R-AEAD-1, R-AEAD-5) ---- */

json_t *agent_cmd_conn_secret(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_conn *c = agent_conn_get(a, req, &err);
    if (!c)
        return err;
    const char *m = agent_get_str(req, "mode", "none");
    const char *hex = agent_get_str(req, "secret", "");
    int mode = !strcmp(m, "auth")      ? MROCE_SEC_AUTH
               : !strcmp(m, "encrypt") ? MROCE_SEC_ENCRYPT
               : !strcmp(m, "none")    ? MROCE_SEC_NONE
                                       : -1;
    uint8_t secret[MROCE_SECRET_LEN];
    if (mode < 0 ||
        (mode && agent_unhex(hex, secret, sizeof(secret)) != MROCE_SECRET_LEN))
        return agent_err("invalid", "conn_secret needs a mode and 32 bytes");
    mroce_dp_lock(agent_dp_of_conn(a, c));
    int rc = mroce_conn_set_secret(c->conn, mode, secret, sizeof(secret));
    mroce_dp_unlock(agent_dp_of_conn(a, c));
    if (rc == MROCE_ENOTSUP)
        return agent_err("unsupported", "no crypto provider");
    return rc < 0 ? agent_err_rc(rc, "mroce_conn_set_secret") : agent_ok();
}
