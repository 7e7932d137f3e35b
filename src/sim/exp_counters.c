/* The endpoints' counters in a run's results (sim/exp_counters.h). */
#include "sim/exp_counters.h"

#include <string.h>

#include "sim/exp.h"
#include "sim/exp_int.h"

#define CONN(f)                                                                \
    {                                                                          \
#f, offsetof(struct mroce_conn_counters, f)                            \
    }
#define CTX(f)                                                                 \
    {                                                                          \
#f, offsetof(struct mroce_ctx_counters, f)                             \
    }

static const struct mroce_sim_cnt_name conn_names[] = {
    CONN(tx_pkts),        CONN(tx_bytes),        CONN(rx_pkts),
    CONN(rx_bytes),       CONN(tx_data_pkts),    CONN(rx_data_pkts),
    CONN(retx_pkts),      CONN(tlp_pkts),        CONN(rto_events),
    CONN(tx_acks),        CONN(rx_acks),         CONN(tx_nacks),
    CONN(rx_nacks),       CONN(tx_ackm_recs),    CONN(rx_ackm_recs),
    CONN(rx_dup_pkts),    CONN(rx_ecn_ce),       CONN(rnr_naks),
    CONN(drop_bad_path),  CONN(drop_dsn_window), CONN(drop_msn_window),
    CONN(drop_bad_key),   CONN(drop_bad_bounds), CONN(drop_bad_access),
    CONN(drop_bad_msg),   CONN(drop_state),      CONN(drop_stale),
    CONN(drop_bad_ack),   CONN(drop_psn_window), CONN(drop_bad_close),
    CONN(psn_resyncs),    CONN(rnr_capped),      CONN(drop_ooo),
    CONN(repaths),        CONN(msgs_tx),         CONN(msgs_rx),
    CONN(lost_sack),      CONN(lost_rack),       CONN(lost_pto),
    CONN(lost_rto),       CONN(lost_rnr),        CONN(drop_bad_tag),
    CONN(drop_replay),    CONN(drop_sec_mode),   CONN(key_updates_tx),
    CONN(key_updates_rx),
};

static const struct mroce_sim_cnt_name ctx_names[] = {
    CTX(rx_pkts),          CTX(tx_pkts),           CTX(drop_truncated),
    CTX(drop_bad_version), CTX(drop_bad_opcode),   CTX(drop_bad_crc),
    CTX(drop_bad_payload), CTX(drop_unknown_conn), CTX(drop_bad_src),
    CTX(planes_down),
};

/* A field added to either struct must be named here (and is then in
 * every run's JSON): the tables cover the structs word for word. */
_Static_assert(sizeof(conn_names) / sizeof(conn_names[0]) * sizeof(uint64_t) ==
                   sizeof(struct mroce_conn_counters),
               "name every field of struct mroce_conn_counters");
_Static_assert(sizeof(ctx_names) / sizeof(ctx_names[0]) * sizeof(uint64_t) ==
                   sizeof(struct mroce_ctx_counters),
               "name every field of struct mroce_ctx_counters");

const struct mroce_sim_cnt_name *mroce_sim_conn_cnt_names(size_t *n)
{
    *n = sizeof(conn_names) / sizeof(conn_names[0]);
    return conn_names;
}

const struct mroce_sim_cnt_name *mroce_sim_ctx_cnt_names(size_t *n)
{
    *n = sizeof(ctx_names) / sizeof(ctx_names[0]);
    return ctx_names;
}

uint64_t mroce_sim_cnt_get(const void *counters, size_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)counters + off, sizeof(v));
    return v;
}

void mroce_sim_cnt_add(void *a, const void *b, size_t size)
{
    for (size_t off = 0; off + sizeof(uint64_t) <= size;
         off += sizeof(uint64_t)) {
        uint64_t v = mroce_sim_cnt_get(a, off) + mroce_sim_cnt_get(b, off);
        memcpy((uint8_t *)a + off, &v, sizeof(v));
    }
}

static uint64_t cnt_drops(const void *cnt, const struct mroce_sim_cnt_name *nm,
                          size_t n, void (*fn)(void *, const char *, uint64_t),
                          void *ud)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = mroce_sim_cnt_get(cnt, nm[i].off);
        if (v && strncmp(nm[i].name, "drop_", 5) == 0) {
            if (fn)
                fn(ud, nm[i].name + 5, v);
            total += v;
        }
    }
    return total;
}

uint64_t mroce_sim_cnt_drops(const struct mroce_sim_exp_result *r,
                             void (*fn)(void *ud, const char *name, uint64_t v),
                             void *ud)
{
    return cnt_drops(&r->conn_cnt, conn_names,
                     sizeof(conn_names) / sizeof(conn_names[0]), fn, ud) +
           cnt_drops(&r->ctx_cnt, ctx_names,
                     sizeof(ctx_names) / sizeof(ctx_names[0]), fn, ud);
}

static void cnt_conn(struct mroce_conn_counters *sum,
                     const struct mroce_conn *c)
{
    if (!c)
        return;
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(c, &cc);
    mroce_sim_cnt_add(sum, &cc, sizeof(cc));
}

/* This rank's connections: both ends of its flows, or its ranks' of the
 * collective. */
static void cnt_conns(const struct exp *x, struct mroce_conn_counters *sum)
{
    for (int i = 0; x->fl && i < x->n_flows; i++) {
        cnt_conn(sum, x->fl[i].sc);
        cnt_conn(sum, x->fl[i].rc);
    }
    for (int a = 0; x->comm && a < x->comm->n; a++)
        for (int b = 0; x->comm->rank[a].conn && b < x->comm->n; b++)
            cnt_conn(sum, x->comm->rank[a].conn[b]);
}

static void cnt_ctxs(const struct exp *x, struct mroce_ctx_counters *sum)
{
    for (int h = 0; x->eps && h < x->c.hosts; h++) {
        if (!x->eps[h].ctx)
            continue;
        struct mroce_ctx_counters cc;
        mroce_ctx_get_counters(x->eps[h].ctx, &cc);
        mroce_sim_cnt_add(sum, &cc, sizeof(cc));
    }
}

int exp_counters_merge(struct exp *x)
{
    enum { NC = sizeof(struct mroce_conn_counters) / sizeof(uint64_t) };
    enum { NX = sizeof(struct mroce_ctx_counters) / sizeof(uint64_t) };
    struct mroce_conn_counters conn = {0};
    struct mroce_ctx_counters ctx = {0};
    cnt_conns(x, &conn);
    cnt_ctxs(x, &ctx);
    uint64_t v[NC + NX];
    memcpy(v, &conn, sizeof(conn));
    memcpy(v + NC, &ctx, sizeof(ctx));
    int err = exp_par_reduce(x, v, NC + NX, 0);
    if (err)
        return err;
    memcpy(&x->mg.conn_cnt, v, sizeof(conn));
    memcpy(&x->mg.ctx_cnt, v + NC, sizeof(ctx));
    return 0;
}
