/* The IUT's side of one test, through the agent: the context, the default
 * memory region and the connection, connected to the suite's endpoint;
 * then work requests, completions, counters and memory. Also the
 * verdict helpers every test uses. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "conform/cf.h"

/* ---- verdicts ---- */

static void iut_msg(struct cf_t *t, const char *prefix, const char *fmt,
                    va_list ap)
{
    size_t n = strlen(t->msg);
    if (n + 4 >= sizeof(t->msg))
        return;
    if (n)
        n += (size_t)snprintf(t->msg + n, sizeof(t->msg) - n, "; ");
    if (prefix && n < sizeof(t->msg))
        n += (size_t)snprintf(t->msg + n, sizeof(t->msg) - n, "%s", prefix);
    if (n < sizeof(t->msg))
        vsnprintf(t->msg + n, sizeof(t->msg) - n, fmt, ap);
}

bool cf_fail(struct cf_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    iut_msg(t, NULL, fmt, ap);
    va_end(ap);
    t->failed++;
    return false;
}

void cf_note(struct cf_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    iut_msg(t, "note: ", fmt, ap);
    va_end(ap);
}

_Noreturn void cf_abort(struct cf_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    iut_msg(t, NULL, fmt, ap);
    va_end(ap);
    t->failed++;
    longjmp(*t->abort_jmp, 1);
}

_Noreturn void cf_skip(struct cf_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    t->msg[0] = 0;
    iut_msg(t, "skipped: ", fmt, ap);
    va_end(ap);
    t->skipped = true;
    longjmp(*t->abort_jmp, 1);
}

void cf_need(struct cf_t *t, const char *cap)
{
    if (!cf_agent_has(t->agent, cap))
        cf_skip(t, "the agent does not offer %s", cap);
}

/* ---- requests ---- */

static const char *iut_str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

bool cf_reply_ok(json_t *rep, char *code, size_t cap)
{
    bool ok = json_is_true(json_object_get(rep, "ok"));
    if (!ok && code)
        snprintf(code, cap, "%s", rep ? iut_str(rep, "error") : "internal");
    return ok;
}

json_t *cf_call(struct cf_t *t, json_t *req)
{
    if (!req)
        cf_abort(t, "the suite built a bad request (json_pack)");
    json_t *rep = cf_agent_call(t->agent, req);
    if (!rep)
        cf_abort(t, "%s", t->agent->err);
    return rep;
}

/* A request that must succeed; aborts the test otherwise. */
static json_t *iut_must(struct cf_t *t, json_t *req, const char *what)
{
    json_t *rep = cf_call(t, req);
    char code[32];
    if (!cf_reply_ok(rep, code, sizeof(code))) {
        const char *m = json_string_value(json_object_get(rep, "message"));
        cf_note(t, "%s: %s (%s)", what, code, m ? m : "");
        json_decref(rep);
        if (!strcmp(code, "unsupported"))
            cf_skip(t, "%s is unsupported by the agent", what);
        cf_abort(t, "set-up failed");
    }
    return rep;
}

static uint64_t iut_u64(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

/* ---- parameters ---- */

static void iut_params_read(json_t *j, struct cf_params *p)
{
    memset(p, 0, sizeof(*p));
    p->version = (uint32_t)iut_u64(j, "version");
    p->conn_id = (uint32_t)iut_u64(j, "conn_id");
    json_t *addrs = json_object_get(j, "addrs");
    const char *a0 = json_string_value(json_array_get(addrs, 0));
    snprintf(p->addr, sizeof(p->addr), "%s", a0 ? a0 : "");
    p->udp_port = (uint16_t)iut_u64(j, "udp_port");
    p->n_paths = (uint16_t)iut_u64(j, "n_paths");
    p->n_streams = (uint16_t)iut_u64(j, "n_streams");
    p->mtu = (uint32_t)iut_u64(j, "mtu");
    p->dsn_window = (uint32_t)iut_u64(j, "dsn_window");
    p->msg_window = (uint32_t)iut_u64(j, "msg_window");
    p->max_rd = (uint32_t)iut_u64(j, "max_rd");
    p->init_psn = (uint32_t)iut_u64(j, "init_psn");
    p->init_dsn = (uint32_t)iut_u64(j, "init_dsn");
    p->init_msn = (uint32_t)iut_u64(j, "init_msn");
    p->path_window = (uint32_t)iut_u64(j, "path_window");
    p->ack_every = (uint32_t)iut_u64(j, "ack_every");
    p->ack_delay_ns = (uint32_t)iut_u64(j, "ack_delay_ns");
    p->min_rto_ns = iut_u64(j, "min_rto_ns");
    p->max_rto_ns = iut_u64(j, "max_rto_ns");
    p->retry_cnt = (uint32_t)iut_u64(j, "retry_cnt");
    p->rnr_retry = (uint32_t)iut_u64(j, "rnr_retry");
    p->rnr_max_us = (uint32_t)iut_u64(j, "rnr_max_us");
    p->features = (uint32_t)iut_u64(j, "features");
}

json_t *cf_params_json(const struct cf_params *p)
{
    json_t *o = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:[s], s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "version", (json_int_t)p->version, "conn_id", (json_int_t)p->conn_id,
        "init_psn", (json_int_t)p->init_psn, "init_dsn",
        (json_int_t)p->init_dsn, "init_msn", (json_int_t)p->init_msn, "addrs",
        p->addr, "udp_port", (json_int_t)p->udp_port, "n_paths",
        (json_int_t)p->n_paths, "n_streams", (json_int_t)p->n_streams, "mtu",
        (json_int_t)p->mtu, "dsn_window", (json_int_t)p->dsn_window,
        "msg_window", (json_int_t)p->msg_window, "max_rd",
        (json_int_t)p->max_rd);
    json_t *tm = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "path_window",
        (json_int_t)p->path_window, "ack_every", (json_int_t)p->ack_every,
        "ack_delay_ns", (json_int_t)p->ack_delay_ns, "min_rto_ns",
        (json_int_t)p->min_rto_ns, "max_rto_ns", (json_int_t)p->max_rto_ns,
        "retry_cnt", (json_int_t)p->retry_cnt, "rnr_retry",
        (json_int_t)p->rnr_retry, "rnr_max_us", (json_int_t)p->rnr_max_us);
    json_object_update(o, tm);
    json_decref(tm);
    json_object_set_new(o, "features", json_integer(p->features));
    return o;
}

static void iut_timers_read(json_t *j, struct cf_timers *tm)
{
    tm->ack_delay_ns = iut_u64(j, "ack_delay_ns");
    tm->ack_every = (uint32_t)iut_u64(j, "ack_every");
    tm->min_rto_ns = iut_u64(j, "min_rto_ns");
    tm->max_rto_ns = iut_u64(j, "max_rto_ns");
    tm->initial_rto_ns = iut_u64(j, "initial_rto_ns");
    tm->retry_cnt = (uint32_t)iut_u64(j, "retry_cnt");
    tm->rnr_retry = (uint32_t)iut_u64(j, "rnr_retry");
    tm->rnr_delay_us = (uint32_t)iut_u64(j, "rnr_delay_us");
    tm->path_window = (uint32_t)iut_u64(j, "path_window");
    tm->max_tx_per_dsn = (uint32_t)iut_u64(j, "max_tx_per_dsn");
}

static uint32_t iut_rand32(void)
{
    uint32_t v = 0;
    while (!v)
        if (getrandom(&v, sizeof(v), 0) != sizeof(v))
            v = (uint32_t)cf_now() * 2654435761u;
    return v;
}

static struct cf_open iut_defaults(const struct cf_open *o)
{
    struct cf_open d = o ? *o : (struct cf_open){0};
    d.mtu = d.mtu ? d.mtu : 1024;
    d.src_ports = d.src_ports ? d.src_ports : 16;
    d.n_paths = d.n_paths ? d.n_paths : 4;
    d.n_streams = d.n_streams ? d.n_streams : 2;
    /* generous on a shared VM: a stalled suite must not look like loss */
    d.min_rto_ns = d.min_rto_ns ? d.min_rto_ns : 5000000;
    d.max_rto_ns = d.max_rto_ns ? d.max_rto_ns : 200000000;
    return d;
}

static json_t *iut_conn_req(const struct cf_t *t, const struct cf_open *o)
{
    json_t *r =
        json_pack("{s:s, s:i}", "cmd", "conn_create", "ctx", t->iut.ctx);
#define SETI(k, v)                                                             \
    if (v)                                                                     \
    json_object_set_new(r, k, json_integer((json_int_t)(v)))
    SETI("n_paths", o->n_paths);
    SETI("n_streams", o->n_streams);
    SETI("sq_depth", o->sq_depth);
    SETI("rq_depth", o->rq_depth);
    SETI("dsn_window", o->dsn_window);
    SETI("path_window", o->path_window);
    SETI("max_rd", o->max_rd);
    SETI("ack_every", o->ack_every);
    SETI("ack_delay_ns", o->ack_delay_ns);
    SETI("min_rto_ns", o->min_rto_ns);
    SETI("max_rto_ns", o->max_rto_ns);
    SETI("init_cwnd_pkts", o->init_cwnd_pkts);
    SETI("max_conn_cwnd_pkts", o->max_conn_cwnd_pkts);
    SETI("tail_copies", o->tail_copies);
    SETI("ackm_off", o->iut_ackm_off);
    if (o->retry_cnt > 0)
        SETI("retry_cnt", o->retry_cnt);
    if (o->rnr_retry > 0)
        SETI("rnr_retry", o->rnr_retry);
#undef SETI
    if (o->iut_init) {
        json_object_set_new(r, "init_psn", json_integer(o->iut_init_psn));
        json_object_set_new(r, "init_dsn", json_integer(o->iut_init_dsn));
        json_object_set_new(r, "init_msn", json_integer(o->iut_init_msn));
    }
    return r;
}

static void iut_open_ctx(struct cf_t *t, const struct cf_open *o)
{
    json_t *rep = iut_must(t,
                           json_pack("{s:s, s:I, s:I, s:I}", "cmd", "ctx_open",
                                     "mtu", (json_int_t)o->mtu, "link_mbps",
                                     (json_int_t)o->link_mbps, "src_ports",
                                     (json_int_t)o->src_ports),
                           "ctx_open");
    t->iut.ctx = (int)iut_u64(rep, "ctx");
    snprintf(t->iut.addr, sizeof(t->iut.addr), "%s", iut_str(rep, "addr"));
    t->iut.port = (uint16_t)iut_u64(rep, "port");
    json_decref(rep);
    t->opened = true;
}

static void iut_open_mr(struct cf_t *t)
{
    json_t *rep =
        iut_must(t,
                 json_pack("{s:s, s:i, s:i, s:[sss]}", "cmd", "mr_reg", "ctx",
                           t->iut.ctx, "len", CF_IUT_MR_LEN, "access",
                           "local_write", "remote_write", "remote_read"),
                 "mr_reg");
    t->iut.mr = (int)iut_u64(rep, "mr");
    t->iut.va = iut_u64(rep, "va");
    t->iut.rkey = (uint32_t)iut_u64(rep, "rkey");
    t->iut.lkey = (uint32_t)iut_u64(rep, "lkey");
    json_decref(rep);
}

static void iut_open_conn(struct cf_t *t, const struct cf_open *o)
{
    json_t *rep = iut_must(t, iut_conn_req(t, o), "conn_create");
    t->iut.conn = (int)iut_u64(rep, "conn");
    iut_params_read(json_object_get(rep, "params"), &t->iut.params);
    iut_timers_read(json_object_get(rep, "timers"), &t->iut.timers);
    json_decref(rep);
}

static struct cf_open iut_cur; /* the set-up of the running test */

/* The suite acknowledges at once, but it may be descheduled on a busy
 * host: half a millisecond of delayed-ACK bound keeps the IUT's tail-loss
 * probes from firing at every stall (R-RTT-7). With slow_tlp, just below
 * the IUT's min_rto (R-CONN-4): the PTO then comes after any SACK-driven
 * retransmission, so a test can tell which rule resent what. */
uint32_t cf_my_ack_delay(const struct cf_t *t)
{
    uint64_t m = t->iut.params.min_rto_ns;
    if (iut_cur.slow_tlp)
        return (uint32_t)(m - m / 10);
    return (uint32_t)(m / 2 < 500000 ? m / 2 : 500000);
}

void cf_my_params(struct cf_t *t, struct cf_params *out)
{
    const struct cf_params *r = &t->iut.params;
    const struct cf_open *o = &iut_cur;
    *out = (struct cf_params){
        .version = 1,
        .conn_id = t->p->my_id,
        .udp_port = t->p->s.port,
        .n_paths = o->my_paths ? o->my_paths : r->n_paths,
        .n_streams = o->my_streams ? o->my_streams : r->n_streams,
        .mtu = o->my_mtu ? o->my_mtu : r->mtu,
        .dsn_window = o->my_dsn_window ? o->my_dsn_window : r->dsn_window,
        .msg_window = o->my_msg_window ? o->my_msg_window : 64,
        .max_rd = o->my_max_rd ? o->my_max_rd : 16,
        .init_psn = o->my_init_psn,
        .init_dsn = o->my_init_dsn,
        .init_msn = o->my_init_msn,
        .path_window = 256,
        .ack_every = o->my_ack_every ? o->my_ack_every : 1,
        .ack_delay_ns = cf_my_ack_delay(t),
        .min_rto_ns = 1000000,
        .max_rto_ns = 100000000,
        .retry_cnt = 7,
        .rnr_retry = 7,
        .rnr_max_us = 1000000,
        .features = o->my_ackm ? CF_FEAT_ACKM : 0,
    };
    snprintf(out->addr, sizeof(out->addr), "%s", t->ip);
}

static uint32_t iut_min(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* R-CONN-3: the effective values both sides compute. */
static void iut_effective(struct cf_t *t, const struct cf_params *mine)
{
    struct cf_peer *p = t->p;
    const struct cf_params *r = &t->iut.params;
    p->n_paths = (uint16_t)iut_min(mine->n_paths, r->n_paths);
    p->n_streams = (uint16_t)iut_min(mine->n_streams, r->n_streams);
    p->mtu = iut_min(mine->mtu, r->mtu);
    p->dsn_window = iut_min(mine->dsn_window, r->dsn_window);
    p->iut_msg_window = r->msg_window;
    p->my_msg_window = mine->msg_window;
    p->ackm = mine->features & r->features & CF_FEAT_ACKM; /* R-VER-5 */
    /* R-CONN-5: where each direction's sequence numbers start */
    for (int i = 0; i < CF_MAX_PATHS; i++) {
        p->psn[i] = mine->init_psn;
        p->rx[i] = (struct cf_rxpath){.init_psn = r->init_psn};
    }
    for (int i = 0; i < CF_MAX_STREAMS; i++) {
        p->msn[i] = mine->init_msn;
        p->ssn[i] = 0;
        p->mon.next_msn[i] = r->init_msn;
        p->mon.next_ssn[i] = 0;
        p->in_base[i] = r->init_msn;
    }
    p->dsn = mine->init_dsn;
    p->dsn_cum = r->init_dsn;
    p->iut_init_psn = r->init_psn;
    p->iut_init_dsn = r->init_dsn;
    p->iut_init_msn = r->init_msn;
    free(p->acc);
    p->acc = calloc(p->dsn_window ? p->dsn_window : 1, 1);
    if (!p->acc)
        cf_abort(t, "out of memory");
}

void cf_apply_params(struct cf_t *t, const struct cf_params *mine)
{
    iut_effective(t, mine);
}

const char *cf_connect(struct cf_t *t, const struct cf_params *mine)
{
    static char code[32];
    json_t *rep =
        cf_call(t, json_pack("{s:s, s:i, s:o}", "cmd", "conn_connect", "conn",
                             t->iut.conn, "params", cf_params_json(mine)));
    bool ok = cf_reply_ok(rep, code, sizeof(code));
    json_decref(rep);
    if (!ok)
        return code;
    iut_effective(t, mine);
    return NULL;
}

/* R-AEAD-5: both sides take the same fresh secret before connecting. */
static void iut_secure(struct cf_t *t, int mode)
{
    cf_need(t, "secure");
    if (getrandom(t->iut.secret, 32, 0) != 32)
        cf_pattern(t->iut.secret, 32, (uint32_t)cf_now());
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", t->iut.secret[i]);
    json_t *rep =
        cf_call(t, json_pack("{s:s, s:i, s:s, s:s}", "cmd", "conn_secret",
                             "conn", t->iut.conn, "mode",
                             mode == 2 ? "encrypt" : "auth", "secret", hex));
    char code[32];
    bool ok = cf_reply_ok(rep, code, sizeof(code));
    json_decref(rep);
    if (!ok && !strcmp(code, "unsupported"))
        cf_skip(t, "the IUT has no secure modes here");
    CF_REQUIRE(t, ok, "conn_secret refused: %s", code);
    CF_REQUIRE(t,
               cf_aead_init(&t->p->aead, mode, t->iut.secret, t->p->my_id,
                            t->p->iut_id),
               "the suite's key schedule failed");
}

void cf_open(struct cf_t *t, const struct cf_open *o)
{
    iut_cur = iut_defaults(o);
    iut_open_ctx(t, &iut_cur);
    if (!iut_cur.no_mr)
        iut_open_mr(t);
    iut_open_conn(t, &iut_cur);
    t->p = cf_peer_new(t);
    if (!t->p)
        cf_abort(t, "cannot open the suite's socket on %s", t->ip);
    struct cf_peer *p = t->p;
    p->my_id = iut_rand32();
    p->iut_id = t->iut.params.conn_id;
    p->iut_port = t->iut.params.udp_port;
    if (!cf_parse_ip(t->iut.params.addr, &p->iut_family, p->iut_ip))
        cf_abort(t, "the IUT announced a bad address %s", t->iut.params.addr);
    p->mem_rkey = iut_rand32();
    struct cf_params mine;
    cf_my_params(t, &mine);
    iut_effective(t, &mine);
    if (iut_cur.sec)
        iut_secure(t, iut_cur.sec);
    if (iut_cur.no_connect)
        return;
    const char *err = cf_connect(t, &mine);
    if (err)
        cf_abort(t, "conn_connect: %s", err);
}

void cf_close(struct cf_t *t)
{
    if (t->p)
        cf_mon_finish(t);
    if (t->opened && t->agent->fd >= 0)
        json_decref(
            cf_agent_call(t->agent, json_pack("{s:s, s:i}", "cmd", "ctx_close",
                                              "ctx", t->iut.ctx)));
    for (int i = 0; i < t->n_extra_ctx && t->agent->fd >= 0; i++)
        json_decref(
            cf_agent_call(t->agent, json_pack("{s:s, s:i}", "cmd", "ctx_close",
                                              "ctx", t->extra_ctx[i])));
    t->opened = false;
    cf_peer_free(t->p);
    t->p = NULL;
}

/* ---- work requests and completions ---- */

static json_t *iut_wr_json(struct cf_t *t, const struct cf_wr *wr)
{
    json_t *r =
        json_pack("{s:s, s:i, s:s, s:I, s:i, s:I}", "cmd", "post", "conn",
                  t->iut.conn, "op", wr->op, "wr_id", (json_int_t)wr->wr_id,
                  "stream", wr->stream, "len", (json_int_t)wr->len);
    if (!wr->no_mr) {
        json_object_set_new(r, "mr", json_integer(t->iut.mr));
        json_object_set_new(r, "offset", json_integer(wr->off));
    }
    if (strcmp(wr->op, "recv") && strcmp(wr->op, "send") &&
        strcmp(wr->op, "send_imm")) {
        uint64_t ra = wr->raddr ? wr->raddr : t->p->mem_va + wr->roff;
        json_object_set_new(r, "remote_addr", json_integer((json_int_t)ra));
        json_object_set_new(
            r, "rkey",
            json_integer((json_int_t)(wr->rkey ? wr->rkey : t->p->mem_rkey)));
    }
    if (strstr(wr->op, "imm"))
        json_object_set_new(r, "imm", json_integer((json_int_t)wr->imm));
    return r;
}

const char *cf_post_err(struct cf_t *t, const struct cf_wr *wr)
{
    static char code[32];
    json_t *rep = cf_call(t, iut_wr_json(t, wr));
    bool ok = cf_reply_ok(rep, code, sizeof(code));
    json_decref(rep);
    return ok ? NULL : code;
}

int cf_post(struct cf_t *t, const struct cf_wr *wr)
{
    const char *err = cf_post_err(t, wr);
    if (err && !strcmp(err, "unsupported"))
        cf_skip(t, "the agent cannot post %s", wr->op);
    if (err)
        cf_abort(t, "post %s (wr %llu) refused: %s", wr->op,
                 (unsigned long long)wr->wr_id, err);
    return 0;
}

static void iut_wc_read(json_t *o, struct cf_wc *w)
{
    *w = (struct cf_wc){.wr_id = iut_u64(o, "wr_id"),
                        .stream = (uint16_t)iut_u64(o, "stream"),
                        .byte_len = (uint32_t)iut_u64(o, "byte_len"),
                        .t = cf_now()};
    snprintf(w->cq, sizeof(w->cq), "%s", iut_str(o, "cq"));
    snprintf(w->status, sizeof(w->status), "%s", iut_str(o, "status"));
    snprintf(w->opcode, sizeof(w->opcode), "%s", iut_str(o, "opcode"));
    json_t *imm = json_object_get(o, "imm");
    w->has_imm = json_is_integer(imm);
    w->imm = (uint32_t)json_integer_value(imm);
}

int cf_poll(struct cf_t *t)
{
    json_t *rep = cf_call(t, json_pack("{s:s, s:i, s:i}", "cmd", "poll", "conn",
                                       t->iut.conn, "max", 256));
    json_t *arr = json_object_get(rep, "wc");
    size_t i;
    json_t *v;
    int n = 0;
    json_array_foreach(arr, i, v)
    {
        if (t->n_wc < CF_MAX_WC)
            iut_wc_read(v, &t->wc[t->n_wc++]);
        n++;
    }
    json_decref(rep);
    return n;
}

const struct cf_wc *cf_find_wc(struct cf_t *t, const char *cq, uint64_t wr_id)
{
    for (int i = 0; i < t->n_wc; i++)
        if (t->wc[i].wr_id == wr_id && (!cq || !strcmp(t->wc[i].cq, cq)))
            return &t->wc[i];
    return NULL;
}

const struct cf_wc *cf_wait_wc(struct cf_t *t, const char *cq, uint64_t wr_id,
                               int ms)
{
    uint64_t end = cf_now() + (uint64_t)ms * 1000000ull;
    for (;;) {
        const struct cf_wc *w = cf_find_wc(t, cq, wr_id);
        if (w)
            return w;
        if (cf_now() >= end)
            return NULL;
        if (!cf_poll(t))
            cf_pump(t, 1);
    }
}

/* ---- counters, state, memory, paths ---- */

int64_t cf_counter(struct cf_t *t, const char *scope, const char *name)
{
    bool ctx = !strcmp(scope, "ctx");
    if (!cf_agent_has(t->agent, ctx ? "counters.ctx" : "counters.conn"))
        return -1;
    json_t *rep = cf_call(t, json_pack("{s:s, s:i}", "cmd",
                                       ctx ? "ctx_counters" : "conn_counters",
                                       ctx ? "ctx" : "conn",
                                       ctx ? t->iut.ctx : t->iut.conn));
    json_t *v = json_object_get(json_object_get(rep, "counters"), name);
    int64_t r = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
    json_decref(rep);
    return r;
}

const char *cf_state(struct cf_t *t, char *buf, size_t cap)
{
    json_t *rep = cf_call(
        t, json_pack("{s:s, s:i}", "cmd", "conn_state", "conn", t->iut.conn));
    const char *s = json_string_value(json_object_get(rep, "state"));
    if (s)
        snprintf(buf, cap, "%s", s);
    json_decref(rep);
    return s ? buf : NULL;
}

void cf_iut_write(struct cf_t *t, uint32_t off, const void *p, uint32_t n)
{
    static const char dig[] = "0123456789abcdef";
    char *hex = malloc(2 * (size_t)n + 1);
    if (!hex)
        cf_abort(t, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        hex[2 * i] = dig[((const uint8_t *)p)[i] >> 4];
        hex[2 * i + 1] = dig[((const uint8_t *)p)[i] & 15];
    }
    hex[2 * (size_t)n] = 0;
    json_t *req = json_pack("{s:s, s:i, s:I, s:s}", "cmd", "mem_write", "mr",
                            t->iut.mr, "offset", (json_int_t)off, "data", hex);
    free(hex);
    json_decref(iut_must(t, req, "mem_write"));
}

static int iut_nib(char c)
{
    return c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
}

void cf_iut_read(struct cf_t *t, uint32_t off, void *p, uint32_t n)
{
    json_t *rep = iut_must(t,
                           json_pack("{s:s, s:i, s:I, s:I}", "cmd", "mem_read",
                                     "mr", t->iut.mr, "offset", (json_int_t)off,
                                     "len", (json_int_t)n),
                           "mem_read");
    const char *hex = json_string_value(json_object_get(rep, "data"));
    if (!hex || strlen(hex) != 2 * (size_t)n) {
        json_decref(rep);
        cf_abort(t, "mem_read returned the wrong length");
    }
    for (uint32_t i = 0; i < n; i++)
        ((uint8_t *)p)[i] =
            (uint8_t)(iut_nib(hex[2 * i]) << 4 | iut_nib(hex[2 * i + 1]));
    json_decref(rep);
}

json_t *cf_path_info(struct cf_t *t, uint16_t path)
{
    if (!cf_agent_has(t->agent, "path.info"))
        return NULL;
    json_t *rep = cf_call(t, json_pack("{s:s, s:i, s:i}", "cmd", "path_info",
                                       "conn", t->iut.conn, "path", path));
    json_t *pi = json_incref(json_object_get(rep, "path"));
    json_decref(rep);
    return pi;
}
