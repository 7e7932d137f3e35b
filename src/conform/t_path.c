/* Section 5: paths. Re-pathing (a new source port, PSNs continuing), the
 * path extensions (disable, enable), what a path may send in each state
 * (no data unless ACTIVE), PROBEs (when, how often, never NACKed), the
 * re-path of an overtaken path, and the states the agent reports. */
#include <string.h>

#include "conform/cf.h"

static const struct cf_pkt *path_next_data(struct cf_t *t, uint64_t wr)
{
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = wr, .len = 32});
    return cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
}

/* R-PATH-5, R-PATH-12: a re-path moves the path to a port none of its
 * paths uses (the old one included: a spare exists), PSNs go on. */
static void path_repath(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    cf_need(t, "path.repath");
    const struct cf_pkt *pk = path_next_data(t, 1);
    CF_REQUIRE(t, pk, "no WRITE");
    uint16_t port = pk->sport;
    uint32_t psn = pk->h.psn;
    for (int i = 0; i < 24; i++) {
        json_t *r =
            cf_call(t, json_pack("{s:s, s:i, s:i}", "cmd", "path_repath",
                                 "conn", t->iut.conn, "path", 0));
        bool ok = cf_reply_ok(r, NULL, 0);
        json_decref(r);
        CF_REQUIRE(t, ok, "path_repath refused");
        pk = path_next_data(t, (uint64_t)i + 2);
        CF_REQUIRE(t, pk, "no WRITE after a re-path");
        CF_CHECK(t, pk->sport != port,
                 "re-path %d kept source port %u (15 spare ports)", i + 1,
                 port);
        uint32_t last = psn; /* PROBEs take PSNs too (R-SACK-2) */
        for (int k = 0; k < t->p->n_log - 1; k++) {
            const struct cf_pkt *q = t->p->log[k];
            if (!q->derr && q->h.path == 0 &&
                (cf_is_data(q, NULL) || q->h.opcode == MROCE_OP_PROBE) &&
                (int32_t)(q->h.psn - last) > 0)
                last = q->h.psn;
        }
        CF_CHECK(t, pk->h.psn == last + 1, "PSN %u after %u across a re-path",
                 pk->h.psn, last);
        port = pk->sport;
        psn = pk->h.psn;
        if (t->failed)
            break;
    }
}

static int path_on_path(struct cf_t *t, int from, uint16_t path)
{
    int n = 0;
    for (int i = from; i < t->p->n_log; i++)
        n += cf_is_data(t->p->log[i], NULL) && t->p->log[i]->h.path == path;
    return n;
}

static bool path_enable(struct cf_t *t, uint16_t path, int on, char *code)
{
    json_t *r =
        cf_call(t, json_pack("{s:s, s:i, s:i, s:i}", "cmd", "path_enable",
                             "conn", t->iut.conn, "path", path, "on", on));
    bool ok = cf_reply_ok(r, code, 32);
    json_decref(r);
    return ok;
}

/* R-PATH-12: a disabled path carries nothing; enabled, it is used. */
static void path_disable(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 4});
    cf_need(t, "path.enable");
    char code[32];
    CF_REQUIRE(t, path_enable(t, 2, 0, code), "disable refused: %s", code);
    int from = t->p->n_log;
    for (int i = 0; i < 16; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 32});
    cf_wait_wc(t, "send", 16, cf_ms(t, 1000));
    CF_CHECK(t, !path_on_path(t, from, 2), "%d packets on a disabled path",
             path_on_path(t, from, 2));
    CF_REQUIRE(t, path_enable(t, 2, 1, code), "enable refused: %s", code);
    from = t->p->n_log;
    for (int i = 0; i < 16; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 17, .len = 32});
    cf_wait_wc(t, "send", 32, cf_ms(t, 1000));
    CF_CHECK(t, path_on_path(t, from, 2) > 0,
             "a re-enabled path got no data in 16 packets over 4 paths");
}

static void path_disable_last(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2});
    cf_need(t, "path.enable");
    char code[32];
    CF_REQUIRE(t, path_enable(t, 0, 0, code), "disable refused: %s", code);
    CF_CHECK(t, !path_enable(t, 1, 0, code),
             "the last enabled path could be disabled");
    cf_alive(t);
}

static bool path_drop_all(struct cf_t *t, const struct cf_pkt *pk, void *ud)
{
    (void)t;
    (void)pk;
    (void)ud;
    return true;
}

/* R-PATH-4, R-PATH-11: with its only path PROBING, a sender sends
 * PROBEs and no data until one is answered; then the data goes. */
static void path_probing_no_data(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 2000000});
    t->p->drop = path_drop_all;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 1000)),
               "no PROBE after an RTO");
    int from = t->p->n_log;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 64});
    cf_pump(t, 30);
    CF_CHECK(t, !path_on_path(t, from, 0), "%d data packets on a PROBING path",
             path_on_path(t, from, 0));
    t->p->drop = NULL; /* the next PROBE is answered */
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 2000)), 2, "SUCCESS");
}

/* R-PATH-3, R-PATH-8: every RTO of a PROBING path re-paths it and sends
 * the next PROBE, every RTO(p) (no backoff). */
static void path_probing_cadence(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 3000000});
    t->p->drop = path_drop_all;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    const struct cf_pkt *at[6];
    int n = 0;
    while (n < 6 && (at[n] = cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 500))))
        n++;
    CF_REQUIRE(t, n >= 5, "%d PROBEs while the peer is silent", n);
    /* with backoff the gaps would be R, 2R, 4R, 8R: the later ones far
     * above 3R; a late timer on a busy host stays well below */
    double r = (double)t->iut.timers.initial_rto_ns / 1e6;
    for (int k = 1; k < n; k++) {
        double gap = cf_ts_ms(at[k - 1], at[k]);
        CF_CHECK(t, gap < 3 * r + 10 * t->scale,
                 "PROBE gap %d is %.1f ms with RTO(p) %.0f ms: a PROBING "
                 "path's RTO backs off",
                 k, gap, r);
    }
}

/* R-PATH-9: a PROBE is never NACKed, whatever its PSN. */
/* R-PATH-9, R-VAL-2, R-VAL-4: a PROBE far ahead is answered at once by an
 * ACK naming it, not recorded, never NACKed; the path's next PSN then is. */
static void path_probe_not_nacked(struct cf_t *t)
{
    cf_open(t, NULL);
    int from = t->p->n_log;
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 3);
    h.psn = t->p->psn[3] + 5000;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, NULL, 0);
    uint16_t path = 3;
    const struct cf_pkt *a = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
    CF_REQUIRE(t, a, "a PROBE far ahead was not answered");
    CF_CHECK(t, a->h.psn == h.psn,
             "the answer has MTH psn %u, not the "
             "PROBE's %u",
             a->h.psn, h.psn);
    CF_CHECK(t, a->h.rx_count == 0 && a->h.sack_high != h.psn,
             "a PROBE far ahead was recorded (rx_count %u, sack_high %u)",
             a->h.rx_count, a->h.sack_high);
    h.psn = cf_next_psn(t, 3);
    h.ts = (uint32_t)cf_now();
    cf_send(t, &h, NULL, 0);
    a = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
    CF_CHECK(t,
             a && a->h.psn == h.psn && a->h.sack_high == h.psn &&
                 a->h.rx_count == 1 && a->h.echo_ts == h.ts,
             "the path's next PSN, a PROBE, was not recorded");
    CF_CHECK(t, !cf_count(t, from, MROCE_OP_NACK), "a PROBE was NACKed");
}

struct silent_arg {
    uint32_t dsn;
    int path;    /* -1 until the lost packet shows it */
    bool probes; /* its PROBEs are lost too */
};

/* Loses one data packet and every PROBE on its path after it. */
static bool path_silent_fn(struct cf_t *t, const struct cf_pkt *pk, void *ud)
{
    (void)t;
    struct silent_arg *s = ud;
    if (cf_is_data(pk, NULL) && pk->h.dsn == s->dsn && s->path < 0) {
        s->path = pk->h.path;
        return true;
    }
    return s->probes && pk->h.opcode == MROCE_OP_PROBE &&
           (int)pk->h.path == s->path;
}

/* Four WRITEs acknowledged (RTT samples), then one lost. */
static struct silent_arg *path_go_silent(struct cf_t *t, struct silent_arg *s,
                                         bool probes)
{
    for (int i = 0; i < 4; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 64});
    cf_wait_wc(t, "send", 4, cf_ms(t, 1000));
    *s = (struct silent_arg){
        .dsn = cf_iut_dsn(t, 4), .path = -1, .probes = probes};
    t->p->drop = path_silent_fn;
    t->p->drop_ud = s;
    CF_REQUIRE(t, path_next_data(t, 5), "no WRITE");
    const struct cf_pkt *pr = cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 1000));
    CF_REQUIRE(
        t, pr && (int)pr->h.path == s->path && (pr->h.flags & MROCE_HF_RETX),
        "no tail-loss PROBE with RETX on the silent path");
    return s;
}

/* R-PATH-4, R-RTT-7: a path made SUSPECT by a tail-loss probe carries no
 * new data until an ACK shows it alive. */
static void path_suspect_no_data(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2, .min_rto_ns = 50000000});
    struct silent_arg s;
    path_go_silent(t, &s, true);
    int from = t->p->n_log;
    for (int i = 0; i < 8; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 6, .len = 64});
    cf_wait_wc(t, "send", 13, cf_ms(t, 1000));
    CF_CHECK(t, !path_on_path(t, from, (uint16_t)s.path),
             "%d data packets on the SUSPECT path %d",
             path_on_path(t, from, (uint16_t)s.path), s.path);
}

/* R-PATH-16 (SHOULD): a PROBE acknowledged past the lost data sent
 * before it on its path: the path is re-pathed. */
static void path_overtaken(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2, .min_rto_ns = 50000000});
    struct silent_arg s;
    path_go_silent(t, &s, false); /* its PROBE's ACK shows the hole */
    const struct cf_pkt *lost = cf_nth_tx(t, s.dsn, 0);
    cf_wait_wc(t, "send", 5, cf_ms(t, 1000));
    for (int i = 0; i < 8; i++) {
        const struct cf_pkt *pk = path_next_data(t, (uint64_t)i + 6);
        if (!pk)
            break;
        if (pk->h.path != lost->h.path)
            continue;
        CF_CHECK(t, pk->sport != lost->sport,
                 "the overtaken path %u kept its source port %u", lost->h.path,
                 lost->sport);
        return;
    }
    cf_fail(t, "path %u got no data again", lost->h.path);
}

/* R-PATH-2, R-PATH-3 through the agent: ACTIVE -> (RTO) PROBING ->
 * (ACK) ACTIVE, DISABLED. */
static void path_states(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 2000000});
    json_t *pi = cf_path_info(t, 0);
    if (!pi)
        cf_skip(t, "the agent reports no path information");
    CF_CHECK(
        t, !strcmp(json_string_value(json_object_get(pi, "state")), "ACTIVE"),
        "a new path is %s", json_string_value(json_object_get(pi, "state")));
    json_decref(pi);
    t->p->drop = path_drop_all;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 1000)), "no PROBE");
    pi = cf_path_info(t, 0);
    CF_CHECK(
        t, !strcmp(json_string_value(json_object_get(pi, "state")), "PROBING"),
        "after an RTO the path is %s, expected PROBING",
        json_string_value(json_object_get(pi, "state")));
    json_decref(pi);
    t->p->drop = NULL;
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
    pi = cf_path_info(t, 0);
    CF_CHECK(t,
             !strcmp(json_string_value(json_object_get(pi, "state")), "ACTIVE"),
             "after an answered PROBE the path is %s, expected ACTIVE",
             json_string_value(json_object_get(pi, "state")));
    json_decref(pi);
}

/* R-PATH-13 (MAY): new data spreads over the paths. */
static void path_spread(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 4});
    for (int i = 0; i < 16; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 32});
    cf_wait_wc(t, "send", 16, cf_ms(t, 1000));
    int used = 0;
    for (uint16_t q = 0; q < 4; q++)
        used += path_on_path(t, 0, q) > 0;
    CF_CHECK(t, used == 4, "16 packets used %d of 4 paths", used);
}

const struct cf_test cf_t_path[] = {
    CF_TEST("path.repath", "5.2", "R-PATH-5 R-PATH-12 R-ENC-3", MUST,
            "a re-path: a new source port, PSNs continue", path_repath),
    CF_TEST("path.disable", "5.4", "R-PATH-12 R-PATH-4", MUST,
            "a disabled path carries nothing; re-enabled, it does",
            path_disable),
    CF_TEST("path.disable_last", "5.4", "R-PATH-12", MUST,
            "the last enabled path cannot be disabled", path_disable_last),
    CF_TEST("path.probing.no_data", "5.1", "R-PATH-4 R-PATH-11 R-PATH-6", MUST,
            "no data on a PROBING path; data once a PROBE is answered",
            path_probing_no_data),
    CF_TEST("path.probing.cadence", "5.3", "R-PATH-8 R-PATH-3 R-RTT-4", MUST,
            "a PROBING path probes every RTO, without backoff",
            path_probing_cadence),
    CF_TEST("path.probe.not_nacked", "5.3", "R-PATH-9 R-VAL-2 R-VAL-4", MUST,
            "a PROBE far ahead answered, not recorded, never NACKed",
            path_probe_not_nacked),
    CF_TEST("path.suspect.no_data", "5.1", "R-PATH-4 R-RTT-7 R-PATH-3", MUST,
            "no new data on a SUSPECT path", path_suspect_no_data),
    CF_TEST("path.overtaken", "5.2", "R-PATH-16 R-RTT-7", SHOULD,
            "a PROBE delivered past lost data: the path is re-pathed",
            path_overtaken),
    CF_TEST("path.states", "5.1", "R-PATH-2 R-PATH-3", MUST,
            "ACTIVE, PROBING after an RTO, ACTIVE after an answer",
            path_states),
    CF_TEST("path.spread", "5.4", "R-PATH-13", MAY,
            "new data spread over every path", path_spread),
    {0},
};
