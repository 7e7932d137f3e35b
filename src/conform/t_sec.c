/* Section 11: security. Keys and initial sequence numbers drawn at
 * random (distinct, every bit varying, not a sequence), keys not given
 * again, replies only to the announced address, bounds checked in 32 and
 * 64 bits before anything is written. */
#include <string.h>

#include "conform/cf.h"

/* Every bit of 33 values takes both values and the values are no
 * arithmetic sequence (a counter): false, with the failure recorded. */
static bool sec_random(struct cf_t *t, const uint32_t *v, int n,
                       const char *what)
{
    uint32_t ones = 0, zeros = 0;
    bool seq = true;
    for (int i = 0; i < n; i++) {
        ones |= v[i];
        zeros |= ~v[i];
        if (i >= 2 && v[i] - v[i - 1] != v[1] - v[0])
            seq = false;
        for (int j = 0; j < i; j++)
            if (v[i] == v[j])
                return cf_fail(t, "%s 0x%08x drawn twice in %d", what, v[i], n);
    }
    bool ok = CF_CHECK(t, ones == 0xFFFFFFFFu && zeros == 0xFFFFFFFFu,
                       "%s: bits that never change in %d draws: 0x%08x", what,
                       n, ~ones | ~zeros);
    return ok & CF_CHECK(t, !seq, "%s form an arithmetic sequence", what);
}

static void sec_rkeys(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t k[33];
    k[0] = t->iut.rkey;
    for (int i = 1; i < 33; i++) {
        struct cf_mr m;
        CF_REQUIRE(t, cf_iut_mr(t, 4096, "remote_read", &m), "mr_reg refused");
        k[i] = m.rkey;
    }
    sec_random(t, k, 33, "rkeys");
}

static void sec_rkey_reuse(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_need(t, "mr.dereg");
    uint32_t old[16];
    for (int i = 0; i < 16; i++) {
        struct cf_mr m;
        CF_REQUIRE(t, cf_iut_mr(t, 4096, "remote_read", &m), "mr_reg refused");
        old[i] = m.rkey;
        json_decref(
            cf_call(t, json_pack("{s:s, s:i}", "cmd", "mr_dereg", "mr", m.mr)));
    }
    for (int i = 0; i < 64; i++) {
        struct cf_mr m;
        CF_REQUIRE(t, cf_iut_mr(t, 4096, "remote_read", &m), "mr_reg refused");
        for (int j = 0; j < 16; j++)
            if (!CF_CHECK(t, m.rkey != old[j],
                          "rkey 0x%08x given again just after its region "
                          "was deregistered",
                          m.rkey))
                return;
    }
}

/* R-SEC-7, R-CONN-5: initial sequence numbers at random, independent of
 * each other and of the id. */
static void sec_init_seq(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t psn[33], dsn[33], msn[33];
    for (int i = 0; i < 33; i++) {
        json_t *rep = cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_create",
                                           "ctx", t->iut.ctx));
        json_t *p = json_object_get(rep, "params");
        psn[i] = (uint32_t)json_integer_value(json_object_get(p, "init_psn"));
        dsn[i] = (uint32_t)json_integer_value(json_object_get(p, "init_dsn"));
        msn[i] = (uint32_t)json_integer_value(json_object_get(p, "init_msn"));
        uint32_t id =
            (uint32_t)json_integer_value(json_object_get(p, "conn_id"));
        json_decref(rep);
        CF_CHECK(t, psn[i] != dsn[i] && dsn[i] != msn[i] && psn[i] != id,
                 "a connection's initial numbers are not independent draws");
    }
    sec_random(t, psn, 33, "init_psn");
    sec_random(t, dsn, 33, "init_dsn");
    sec_random(t, msn, 33, "init_msn");
}

struct ts_arg {
    uint32_t conn;
};

static bool sec_ack_of(const struct cf_pkt *pk, const void *arg)
{
    const struct ts_arg *a = arg;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK && pk->h.conn == a->conn;
}

/* R-HDR-10 (SHOULD), R-SEC-7: each connection's ts carries its own random
 * offset. Two connections of one IUT answer a PROBE each: without
 * offsets their ts differ by the time between the answers (< 2 ms here,
 * as the suite's clock says); with random offsets that happens once in
 * about 1000 runs. */
static void sec_ts_offset(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    uint32_t id2 = cf_second_conn(t);
    const struct cf_pkt *a[2];
    for (int i = 0; i < 2; i++) {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 0);
        h.conn = i ? id2 : t->p->iut_id;
        h.psn = i ? 0 : cf_next_psn(t, 0);
        h.flags = MROCE_HF_ACKREQ;
        cf_send(t, &h, NULL, 0);
        struct ts_arg w = {i ? t->p->extra_ids[0] : t->p->my_id};
        a[i] = cf_wait(t, sec_ack_of, &w, cf_ms(t, 1000));
        CF_REQUIRE(t, a[i], "connection %d did not answer a PROBE", i + 1);
    }
    int32_t skew =
        (int32_t)(a[1]->h.ts - a[0]->h.ts) - (int32_t)(a[1]->t - a[0]->t);
    CF_CHECK(t, skew > 2000000 || skew < -2000000,
             "two connections' ts differ by their time apart (%+d ns): no "
             "random per-connection offset",
             skew);
}

/* R-SEC-4: offset + payload past msg_len, computed in 32 bits, refused:
 * a wrap to a small address must not write. */
static void sec_offset_wrap(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[1023], before[64], after[64];
    cf_pattern(d, sizeof(d), 91);
    cf_iut_read(t, 0, before, sizeof(before));
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 0);
    h.msn = t->p->msn[0]++;
    h.msg_len = 0xFFFFFFFFu;
    h.offset = 0xFFFFFC00u;   /* a multiple of 1024; offset + 1023 = 2^32 - 1 */
    h.va = t->iut.va + 0x400; /* va + offset wraps below va in 32 bits */
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, d, sizeof(d));
    const struct cf_pkt *n = cf_wait_nack(t, cf_ms(t, 1000));
    CF_CHECK(t, n && n->h.nak_code != MROCE_NAK_RNR,
             "a WRITE at offset 2^32 - 1024 was not refused");
    cf_iut_read(t, 0, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)),
             "a WRITE whose offset wraps in 32 bits wrote at the start of the "
             "region");
}

const struct cf_test cf_t_sec[] = {
    CF_TEST("sec.rkeys.random", "11", "R-SEC-2 R-SEC-7", MUST,
            "rkeys drawn at random, unique while registered", sec_rkeys),
    CF_TEST("sec.rkeys.no_reuse", "11", "R-SEC-2", SHOULD,
            "an rkey is not given again soon after deregistration",
            sec_rkey_reuse),
    CF_TEST("sec.init_seq.random", "11", "R-SEC-7 R-CONN-5", MUST,
            "initial PSN, DSN, MSN drawn at random, independently",
            sec_init_seq),
    CF_TEST("sec.ts_offset", "11", "R-HDR-10 R-SEC-7", SHOULD,
            "a random ts offset per connection", sec_ts_offset),
    CF_TEST("sec.bounds.offset_wrap", "11", "R-SEC-4 R-RX-6", MUST,
            "an offset that wraps 32 bits writes nothing", sec_offset_wrap),
    {0},
};
