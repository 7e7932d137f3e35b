/* Checks many tests share: the connection still works, the IUT said
 * nothing, a counter moved, a completion has a status. */
#include <stdio.h>
#include <string.h>

#include "conform/cf.h"

struct cum_arg {
    uint32_t dsn;
};

static bool tlib_cum_past(const struct cf_pkt *pk, const void *arg)
{
    const struct cum_arg *c = arg;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK &&
           (int32_t)(pk->h.dsn_cum - c->dsn) > 0;
}

bool cf_wait_cum(struct cf_t *t, uint32_t dsn, int ms)
{
    struct cum_arg c = {dsn};
    const struct cf_peer *p = t->p;
    if (p->got_ack && (int32_t)(p->iut_cum - dsn) > 0)
        return true; /* an ACK already handled said so */
    return cf_wait(t, tlib_cum_past, &c, ms) != NULL;
}

struct sack_arg {
    uint16_t path;
    uint32_t psn;
};

static bool tlib_sacks(const struct cf_pkt *pk, const void *arg)
{
    const struct sack_arg *a = arg;
    uint32_t i = pk->h.sack_high - a->psn;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK && pk->h.path == a->path &&
           i < 256 && mroce_sack_test(pk->h.sack, i);
}

bool cf_wait_sacked(struct cf_t *t, uint16_t path, uint32_t psn, int ms)
{
    struct sack_arg a = {path, psn};
    return cf_wait(t, tlib_sacks, &a, ms) != NULL;
}

bool cf_barrier_close(struct cf_t *t, int ms)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    cf_send(t, &h, NULL, 0);
    return cf_wait_op(t, MROCE_OP_CLOSE_ACK, ms) != NULL;
}

bool cf_alive(struct cf_t *t)
{
    static uint32_t seed = 1;
    uint8_t data[64], got[64];
    cf_pattern(data, sizeof(data), seed++);
    uint32_t off = CF_IUT_MR_LEN - 4096;
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .roff = off,
                       .data = data,
                       .len = sizeof(data),
                       .path = 0};
    cf_send_msg(t, &m);
    if (!cf_wait_sacked(t, 0, m.psn[0], 2000))
        return cf_fail(t,
                       "the connection no longer works: a valid WRITE "
                       "(DSN %u, path 0 PSN %u) was not acknowledged",
                       m.first_dsn, m.psn[0]);
    cf_iut_read(t, off, got, sizeof(got));
    return CF_CHECK(t, !memcmp(got, data, sizeof(data)),
                    "the connection no longer works: a valid WRITE did not "
                    "land");
}

int cf_replies_since(struct cf_t *t, int from, bool *barrier_ok)
{
    *barrier_ok = cf_barrier(t, 0, 1000);
    int n = t->p->n_log - from - (*barrier_ok ? 1 : 0);
    return n < 0 ? 0 : n;
}

bool cf_silent(struct cf_t *t, int from, const char *what)
{
    bool ok;
    int n = cf_replies_since(t, from, &ok);
    if (!ok)
        return cf_fail(t, "no ACK for a PROBE after %s", what);
    if (n) {
        const struct cf_pkt *pk = t->p->log[from];
        return cf_fail(t, "%d packet(s) answered %s, the first %s", n, what,
                       pk->derr ? "undecodable"
                                : mroce_wire_op_name(pk->h.opcode));
    }
    return true;
}

bool cf_delta(struct cf_t *t, const char *scope, const char *name,
              int64_t before, int64_t want)
{
    if (before < 0)
        cf_skip(t, "the agent does not report the %s counter %s", scope, name);
    int64_t now = cf_counter(t, scope, name);
    return CF_CHECK(t, now - before == want,
                    "counter %s moved by %lld, expected %lld", name,
                    (long long)(now - before), (long long)want);
}

bool cf_wc_is(struct cf_t *t, const struct cf_wc *w, uint64_t wr_id,
              const char *status)
{
    if (!w)
        return cf_fail(t, "no completion for wr %llu",
                       (unsigned long long)wr_id);
    return CF_CHECK(t, !strcmp(w->status, status),
                    "wr %llu completed %s, expected %s",
                    (unsigned long long)wr_id, w->status, status);
}

bool cf_state_is(struct cf_t *t, const char *want)
{
    char st[32];
    const char *s = cf_state(t, st, sizeof(st));
    if (!s) {
        cf_note(t, "the agent does not report the connection state");
        return true;
    }
    return CF_CHECK(t, !strcmp(s, want), "connection is %s, expected %s", s,
                    want);
}

const struct cf_pkt *cf_wait_op(struct cf_t *t, uint8_t op, int ms)
{
    return cf_wait(t, cf_is_op, &op, ms);
}

int cf_ms(const struct cf_t *t, int ms)
{
    return (int)(ms * t->scale);
}

bool cf_iut_mr(struct cf_t *t, uint32_t len, const char *access,
               struct cf_mr *out)
{
    json_t *acc = json_array();
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", access);
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " "))
        json_array_append_new(acc, json_string(s));
    json_t *rep = cf_call(t, json_pack("{s:s, s:i, s:I, s:o}", "cmd", "mr_reg",
                                       "ctx", t->iut.ctx, "len",
                                       (json_int_t)len, "access", acc));
    bool ok = cf_reply_ok(rep, NULL, 0);
    if (ok) {
        out->mr = (int)json_integer_value(json_object_get(rep, "mr"));
        out->va = (uint64_t)json_integer_value(json_object_get(rep, "va"));
        out->rkey = (uint32_t)json_integer_value(json_object_get(rep, "rkey"));
        out->lkey = (uint32_t)json_integer_value(json_object_get(rep, "lkey"));
    }
    json_decref(rep);
    return ok;
}

const struct cf_pkt *cf_wait_nack(struct cf_t *t, int ms)
{
    return cf_wait_op(t, MROCE_OP_NACK, ms);
}

bool cf_nack_is(struct cf_t *t, const struct cf_pkt *pk, uint8_t code,
                const char *what)
{
    if (!pk)
        return cf_fail(t, "no NACK for %s", what);
    return CF_CHECK(t, pk->h.nak_code == code,
                    "%s NACKed with syndrome %u (%s), "
                    "expected %u (%s)",
                    what, pk->h.nak_code, mroce_wire_nak_name(pk->h.nak_code),
                    code, mroce_wire_nak_name(code));
}

uint64_t cf_ms_ns(const struct cf_t *t, double ms)
{
    return (uint64_t)(ms * t->scale * 1e6);
}

bool cf_drop_dsn_fn(struct cf_t *t, const struct cf_pkt *pk, void *ud)
{
    (void)t;
    struct cf_drop_dsn *d = ud;
    if (!cf_is_data(pk, NULL) || pk->h.dsn != d->dsn || d->seen >= d->times)
        return false;
    d->seen++;
    return true;
}

const struct cf_pkt *cf_nth_tx(struct cf_t *t, uint32_t dsn, int i)
{
    for (int k = 0; k < t->p->n_log; k++) {
        const struct cf_pkt *pk = t->p->log[k];
        if (cf_is_data(pk, NULL) && pk->h.dsn == dsn && i-- == 0)
            return pk;
    }
    return NULL;
}

int cf_count_dsn(struct cf_t *t, uint32_t dsn)
{
    int n = 0;
    for (int k = 0; k < t->p->n_log; k++)
        n += cf_is_data(t->p->log[k], NULL) && t->p->log[k]->h.dsn == dsn;
    return n;
}

void cf_write_at(struct cf_t *t, uint16_t path, uint32_t psn, uint32_t ts,
                 uint8_t ecn)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, path);
    h.psn = psn;
    h.ts = ts;
    h.dsn = cf_next_dsn(t);
    h.msn = t->p->msn[0]++;
    h.msg_len = 8;
    h.va = t->iut.va + 8 * (h.dsn % 512);
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send_x(t, &h, "sackdata", 8, &(struct cf_tx){.ecn = ecn});
}

uint32_t cf_iut_ts(const struct cf_t *t, uint16_t path, uint32_t psn)
{
    for (int i = t->p->n_log - 1; i >= 0; i--) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!pk->derr && pk->h.path == path && pk->h.psn == psn &&
            (cf_is_data(pk, NULL) || pk->h.opcode == MROCE_OP_PROBE))
            return pk->h.ts;
    }
    return 0;
}

uint32_t cf_second_conn(struct cf_t *t)
{
    json_t *rep =
        cf_call(t, json_pack("{s:s, s:i, s:i, s:I}", "cmd", "conn_create",
                             "ctx", t->iut.ctx, "n_paths", 1, "min_rto_ns",
                             (json_int_t)5000000));
    json_t *prm = json_object_get(rep, "params");
    uint32_t id2 =
        (uint32_t)json_integer_value(json_object_get(prm, "conn_id"));
    int conn2 = (int)json_integer_value(json_object_get(rep, "conn"));
    json_decref(rep);
    CF_REQUIRE(t, id2, "no second connection");
    struct cf_params mine;
    cf_my_params(t, &mine);
    mine.conn_id = t->p->my_id ^ 0x5A5A5A5Au;
    mine.n_paths = 1;
    mine.n_streams = 1;
    mine.init_psn = mine.init_dsn = mine.init_msn = 0;
    rep = cf_call(t, json_pack("{s:s, s:i, s:o}", "cmd", "conn_connect", "conn",
                               conn2, "params", cf_params_json(&mine)));
    bool ok = cf_reply_ok(rep, NULL, 0);
    json_decref(rep);
    CF_REQUIRE(t, ok, "the second connection did not connect");
    t->p->extra_ids[0] = mine.conn_id;
    return id2;
}

int cf_held_burst(struct cf_t *t, uint32_t my_ack_every)
{
    cf_open(t, &(struct cf_open){.n_paths = 4,
                                 .my_ack_every = my_ack_every,
                                 .min_rto_ns = 100000000});
    t->p->auto_ack = false;
    t->p->rate_mbps = 1;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 200000});
    int most = 0;
    for (int round = 0; round < 10; round++) {
        int from = t->p->n_log;
        cf_pump(t, 3);
        int n = 0;
        for (int i = from; i < t->p->n_log; i++)
            n += cf_is_data(t->p->log[i], NULL);
        if (round >= 3 && n > most)
            most = n;
        for (uint16_t q = 0; q < 4; q++)
            if (t->p->rx[q].any)
                cf_send_ack(t, q);
    }
    return most;
}
