/* Sections 3.15 and 6.2, the feature ACKM: an ACK that carries the
 * acknowledgements of further paths as 48-byte records. As receiver the
 * IUT may let the ACK that R-ACK-1 case 2 alone asks for wait as a record
 * (R-ACKM-4), only where both sides announced the feature (R-ACKM-1); as
 * sender it checks an ACKM whole and drops it whole when any part is
 * bogus, skipping only a stale record (R-ACKM-5). The suite announces the
 * feature in its parameter block (`features`, R-VER-5). */
#include <string.h>

#include "conform/cf.h"
#include "wire/ackm.h"

/* A one-packet WRITE from the suite on path with the next PSN and DSN;
 * returns its PSN. */
static uint32_t am_write(struct cf_t *t, uint16_t path, uint8_t flags)
{
    uint8_t d[16] = {9};
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, path);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + 0x200;
    h.rkey = t->iut.rkey;
    h.flags = flags;
    cf_send(t, &h, d, sizeof(d));
    return h.psn;
}

static bool am_is_ack(const struct cf_pkt *pk)
{
    return !pk->derr &&
           (pk->h.opcode == MROCE_OP_ACK || pk->h.opcode == MROCE_OP_ACKM);
}

static bool am_bit(uint32_t high, const uint64_t sack[4], uint32_t psn)
{
    uint32_t i = high - psn;
    return i < 256 && mroce_sack_test(sack, i);
}

/* Whether pk (an ACK or ACKM) acknowledges path/psn: in its own part
 * (returns 1) or in a record (returns 2); 0 if not. */
static int am_covers(const struct cf_pkt *pk, uint16_t path, uint32_t psn)
{
    if (!am_is_ack(pk))
        return 0;
    if (pk->h.path == path && am_bit(pk->h.sack_high, pk->h.sack, psn))
        return 1;
    uint32_t hold;
    int n = pk->h.opcode == MROCE_OP_ACKM ? mroce_ackm_check(&pk->h, &hold) : 0;
    for (int i = 0; i < n; i++) {
        struct mroce_ackm_rec r;
        mroce_ackm_get(&pk->h, (unsigned)i, &r);
        if (r.path == path && am_bit(r.sack_high, r.sack, psn))
            return 2;
    }
    return 0;
}

/* R-ACKM-2: no record of an ACKM names its own path. */
static bool am_own_record(const struct cf_pkt *pk)
{
    uint32_t hold;
    int n = pk->h.opcode == MROCE_OP_ACKM && !pk->derr
                ? mroce_ackm_check(&pk->h, &hold)
                : 0;
    for (int i = 0; i < n; i++) {
        struct mroce_ackm_rec r;
        mroce_ackm_get(&pk->h, (unsigned)i, &r);
        if (r.path == pk->h.path)
            return true;
    }
    return false;
}

#define AM_SPRAY 8

/* Data above a DSN hole, in order on each path and without ACKREQ: what
 * R-ACK-1 case 2 alone acknowledges. One DSN is skipped (never sent), then
 * n one-packet WRITEs go round-robin over the first `paths` paths. */
static void am_spray(struct cf_t *t, int n, uint16_t paths, uint32_t *psn,
                     uint16_t *pth)
{
    t->p->dsn++; /* the hole: dsn_cum stays below every packet that follows */
    for (int i = 0; i < n; i++) {
        pth[i] = (uint16_t)(i % paths);
        psn[i] = am_write(t, pth[i], 0);
    }
}

/* The log index of the first packet from `from` that acknowledges
 * path/psn, or -1. */
static int am_first_cover(const struct cf_t *t, int from, uint16_t path,
                          uint32_t psn, int *how)
{
    for (int i = from; i < t->p->n_log; i++) {
        int c = am_covers(t->p->log[i], path, psn);
        if (c) {
            if (how)
                *how = c;
            return i;
        }
    }
    return -1;
}

/* Pumps until every sprayed packet is acknowledged or ms pass. */
static bool am_wait_all(struct cf_t *t, int from, int n, const uint32_t *psn,
                        const uint16_t *pth, int ms)
{
    uint64_t end = cf_now() + (uint64_t)ms * 1000000u;
    for (;;) {
        int k = 0;
        while (k < n && am_first_cover(t, from, pth[k], psn[k], NULL) >= 0)
            k++;
        if (k == n)
            return true;
        uint64_t now = cf_now();
        if (now >= end)
            return false;
        cf_next(t, (int)((end - now) / 1000000u) + 1);
    }
}

/* ---- R-ACKM-1: only where both sides announced it ---- */

/* The IUT sprayed with data above a DSN hole acknowledges it, with ACKs:
 * never an ACKM on a connection where ACKM is not in effect. arg: 0 the
 * suite does not announce ACKM, 1 the IUT does not (attribute ackm_off). */
static void am_never_sent(struct cf_t *t)
{
    bool iut_off = t->test->arg != NULL;
    cf_open(t, &(struct cf_open){.my_ackm = iut_off,
                                 .iut_ackm_off = iut_off,
                                 .ack_every = 16});
    if (iut_off && (t->iut.params.features & CF_FEAT_ACKM))
        cf_skip(t, "the IUT announces ACKM although asked not to (no "
                   "ackm_off attribute)");
    uint32_t psn[AM_SPRAY];
    uint16_t pth[AM_SPRAY];
    int from = t->p->n_log;
    am_spray(t, AM_SPRAY, 4, psn, pth);
    bool all = am_wait_all(t, from, AM_SPRAY, psn, pth, cf_ms(t, 200));
    int ackm = cf_count(t, from, MROCE_OP_ACKM);
    CF_CHECK(t, !ackm,
             "%d ACKM(s) sent on a connection where %s did not announce "
             "ACKM",
             ackm, iut_off ? "the IUT" : "the suite");
    CF_CHECK(t, all, "not every packet above the DSN hole was acknowledged");
}

/* An ACKM to a connection without the feature is an unknown opcode: it
 * acknowledges nothing and is counted `opcode` (R-VER-5). */
static void am_off_dropped(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)),
               "the IUT sent no WRITE");
    int64_t before = cf_counter(t, "ctx", "opcode");
    struct mroce_hdr h;
    cf_ack_fill(t, 0, &h); /* as an ACK it would complete the WRITE */
    h.opcode = MROCE_OP_ACKM;
    uint8_t pl[MROCE_ACKM_PRE_LEN];
    cf_send(t, &h, pl, (uint32_t)mroce_ackm_put(pl, 0, NULL, 0));
    cf_pump(t, 10);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "an ACKM on a connection without ACKM completed the WRITE");
    if (before >= 0)
        cf_delta(t, "ctx", "opcode", before, 1);
    cf_send_ack(t, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* ---- R-ACKM-4: records wait at most ack_delay, go with the next ACK ---- */

#define AM_DELAY_MS 20

static void am_open_ackm(struct cf_t *t, const struct cf_open *o)
{
    cf_open(t, o);
    if (!(t->iut.params.features & CF_FEAT_ACKM))
        cf_skip(t, "the IUT does not announce the feature ACKM");
}

/* Phase 1 (rule 1): data that case 2 alone acknowledges is acknowledged
 * within the IUT's ack_delay, by an ACK or an ACKM record, never later.
 * Phase 2 (rule 2): once records wait, the next ACK (here one that ACKREQ
 * asks for) carries them; no ACKM names its own path (R-ACKM-2). */
static void am_records(struct cf_t *t)
{
    am_open_ackm(t, &(struct cf_open){.my_ackm = true,
                                      .ack_every = 16,
                                      .ack_delay_ns = AM_DELAY_MS * 1000000u});
    uint32_t psn[AM_SPRAY];
    uint16_t pth[AM_SPRAY];
    int from = t->p->n_log;
    uint64_t t0 = cf_now();
    am_spray(t, AM_SPRAY, 4, psn, pth);
    double bound = AM_DELAY_MS + 15 * t->scale;
    am_wait_all(t, from, AM_SPRAY, psn, pth, (int)bound + 20);
    int recs = 0;
    for (int k = 0; k < AM_SPRAY; k++) {
        int how = 0;
        int i = am_first_cover(t, from, pth[k], psn[k], &how);
        double ms = i < 0 ? -1 : (double)(t->p->log[i]->t - t0) / 1e6;
        recs += how == 2;
        CF_CHECK(t, i >= 0 && ms <= bound,
                 "path %u PSN %u (no ACKREQ, above a DSN hole) acknowledged "
                 "%s%.1f ms after it was sent, ack_delay %d ms",
                 pth[k], psn[k], i < 0 ? "not within " : "", i < 0 ? bound : ms,
                 AM_DELAY_MS);
    }
    cf_note(t, "%d of %d packets acknowledged in ACKM records", recs, AM_SPRAY);
    /* phase 2: every path waits as a record, then ACKREQ on path 0 */
    from = t->p->n_log;
    am_spray(t, 4, 4, psn, pth);
    uint32_t req = am_write(t, 0, MROCE_HF_ACKREQ);
    am_wait_all(t, from, 1, &req, pth, cf_ms(t, 200));
    int at = am_first_cover(t, from, 0, req, NULL);
    CF_REQUIRE(t, at >= 0, "no ACK for an ACKREQ on path 0");
    for (int k = 1; k < 4; k++) {
        int i = am_first_cover(t, from, pth[k], psn[k], NULL);
        CF_CHECK(t, i >= 0 && i <= at,
                 "path %u's acknowledgement was still waiting after the "
                 "ACK that the ACKREQ asked for",
                 pth[k]);
    }
    for (int i = from; i < t->p->n_log; i++)
        CF_CHECK(t, !am_own_record(t->p->log[i]),
                 "an ACKM for path %u carries a record of path %u",
                 t->p->log[i]->h.path, t->p->log[i]->h.path);
    cf_pump(t, AM_DELAY_MS);
    for (int i = 0; i < t->p->n_log; i++)
        CF_CHECK(t, !am_own_record(t->p->log[i]),
                 "an ACKM for path %u carries a record of path %u",
                 t->p->log[i]->h.path, t->p->log[i]->h.path);
}

/* ---- R-ACKM-5: the sender checks an ACKM whole ---- */

struct am_ackm {
    struct mroce_hdr h;
    struct mroce_ackm_rec r[8];
    unsigned n;
};

/* A genuine ACKM for path own: the suite's receiver state of own in the
 * AKH, and of every other path it received data on as records. */
static void am_build(struct cf_t *t, uint16_t own, struct am_ackm *a)
{
    cf_ack_fill(t, own, &a->h);
    a->h.opcode = MROCE_OP_ACKM;
    a->n = 0;
    for (uint16_t q = 0; q < t->p->n_paths && a->n < 6; q++) {
        const struct cf_rxpath *r = &t->p->rx[q];
        if (q == own || !r->any)
            continue;
        struct mroce_ackm_rec *x = &a->r[a->n++];
        *x = (struct mroce_ackm_rec){.path = q,
                                     .sack_high = r->high,
                                     .echo_ts = r->echo,
                                     .ce_count = r->ce_count,
                                     .rx_count = r->rx_count};
        memcpy(x->sack, r->bits, sizeof(x->sack));
    }
}

static void am_send(struct cf_t *t, const struct am_ackm *a)
{
    uint8_t pl[MROCE_ACKM_PRE_LEN + 8 * MROCE_ACKM_REC_LEN];
    size_t len = mroce_ackm_put(pl, 0, a->r, a->n);
    cf_send(t, &a->h, pl, (uint32_t)len);
}

#define AM_WRS 8

/* The IUT writes AM_WRS one-packet messages over 4 paths, unacknowledged;
 * returns the path of the last one (the ACKM's own path). */
static uint16_t am_iut_writes(struct cf_t *t)
{
    am_open_ackm(t, &(struct cf_open){.my_ackm = true});
    t->p->auto_ack = false;
    for (int i = 0; i < AM_WRS; i++)
        cf_post(t, &(struct cf_wr){.op = "write",
                                   .wr_id = (uint64_t)i + 1,
                                   .len = 64,
                                   .roff = (uint32_t)i * 64});
    const struct cf_pkt *last = NULL, *pk;
    int got = 0, paths = 0;
    bool seen[4] = {0};
    while (got < AM_WRS &&
           (pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)))) {
        got++;
        last = pk;
        if (pk->h.path < 4 && !seen[pk->h.path]) {
            seen[pk->h.path] = true;
            paths++;
        }
    }
    CF_REQUIRE(t, got == AM_WRS, "the IUT sent %d of %d WRITEs", got, AM_WRS);
    if (paths < 2)
        cf_skip(t, "the IUT sent %d WRITEs on one path: no record to make",
                AM_WRS);
    return last->h.path;
}

enum { AM_BAD_ECHO, AM_BAD_PATH_N, AM_BAD_DUP, AM_BAD_OWN };

static const char *const am_bad_what[] = {
    "a record whose echo_ts is not its PSN's ts",
    "a record naming a path not below N",
    "two records naming one path",
    "a record naming the ACKM's own path",
};

static void am_spoil(struct cf_t *t, struct am_ackm *a, int how)
{
    if (how == AM_BAD_ECHO)
        a->r[0].echo_ts ^= 0x00010000u;
    else if (how == AM_BAD_PATH_N)
        a->r[a->n++] = (struct mroce_ackm_rec){.path = t->p->n_paths,
                                               .sack_high = a->r[0].sack_high,
                                               .echo_ts = a->r[0].echo_ts,
                                               .sack = {1ull << 63}};
    else if (how == AM_BAD_DUP)
        a->r[a->n] = a->r[0], a->n++;
    else /* the own path's state, as a record */
        a->r[a->n++] = (struct mroce_ackm_rec){
            .path = a->h.path,
            .sack_high = a->h.sack_high,
            .echo_ts = a->h.echo_ts,
            .ce_count = a->h.ce_count,
            .rx_count = a->h.rx_count,
            .sack = {a->h.sack[0], a->h.sack[1], a->h.sack[2], a->h.sack[3]}};
}

/* A forged ACKM (one part bogus, a dsn_cum covering every WRITE) is
 * dropped whole: no WRITE completes; then the genuine ACKM completes
 * them all. With `counted`, only the bad_ack count (SHOULD). */
static void am_forged_run(struct cf_t *t, int how, bool counted)
{
    uint16_t own = am_iut_writes(t);
    int64_t bad = cf_counter(t, "conn", "bad_ack");
    struct am_ackm a;
    am_build(t, own, &a);
    struct am_ackm f = a;
    am_spoil(t, &f, how);
    am_send(t, &f);
    cf_pump(t, 10);
    if (counted) {
        cf_delta(t, "conn", "bad_ack", bad, 1);
        return;
    }
    cf_poll(t);
    int done = 0;
    for (int i = 1; i <= AM_WRS; i++)
        done += cf_find_wc(t, "send", (uint64_t)i) != NULL;
    CF_CHECK(t, !done,
             "an ACKM with %s (dsn_cum covering all) completed %d WRITE(s)",
             am_bad_what[how], done);
    am_build(t, own, &a); /* the state may have moved (a probe) */
    am_send(t, &a);
    const struct cf_wc *w = cf_wait_wc(t, "send", AM_WRS, cf_ms(t, 1000));
    CF_CHECK(t, w && !strcmp(w->status, "SUCCESS"),
             "the genuine ACKM after the forged one did not complete the "
             "WRITEs");
}

static void am_forged(struct cf_t *t)
{
    am_forged_run(t, (int)(intptr_t)t->test->arg, false);
}

static void am_forged_counted(struct cf_t *t)
{
    am_forged_run(t, AM_BAD_ECHO, true);
}

/* A stale record (its sack_high long resolved and beyond the PSNs whose
 * ts the IUT keeps) is skipped; the rest of the ACKM acts. Two paths;
 * path_window 64 keeps the IUT's PSN ring small, and a 512-packet WRITE
 * acknowledged as it goes carries path q far past its first PSN. Then
 * the IUT writes once more on some path p, and an ACKM for p carries a
 * record of q naming q's first PSN with its genuine ts. */
static void am_stale_run(struct cf_t *t, bool counted)
{
    am_open_ackm(
        t, &(struct cf_open){.my_ackm = true, .n_paths = 2, .path_window = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 512 * 1024});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 3000)), 1, "SUCCESS");
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 64});
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, pk, "the IUT sent no WRITE");
    uint16_t own = pk->h.path, q = (uint16_t)(1 - own);
    uint32_t first = cf_iut_psn(t, 0);
    uint32_t sent = t->p->rx[q].high - first + 1;
    if (!t->p->rx[q].any || sent < 200)
        cf_skip(t, "path %u carried only %u packets", q, sent);
    struct am_ackm a;
    am_build(t, own, &a);
    a.n = 1;
    a.r[0] = (struct mroce_ackm_rec){.path = q,
                                     .sack_high = first,
                                     .echo_ts = cf_iut_ts(t, q, first),
                                     .rx_count = 1,
                                     .sack = {1ull << 63}};
    int64_t bad = cf_counter(t, "conn", "bad_ack");
    int64_t stale = cf_counter(t, "conn", "stale");
    am_send(t, &a);
    const struct cf_wc *w = cf_wait_wc(t, "send", 2, cf_ms(t, 200));
    if (counted) {
        cf_delta(t, "conn", "stale", stale, 1);
        cf_delta(t, "conn", "bad_ack", bad, 0);
        return;
    }
    CF_CHECK(t, w && !strcmp(w->status, "SUCCESS"),
             "an ACKM with a stale record of path %u (PSN %u, %u PSNs ago) "
             "did not act: its own path's WRITE did not complete",
             q, first, sent);
}

static void am_stale(struct cf_t *t)
{
    am_stale_run(t, false);
}

static void am_stale_counted(struct cf_t *t)
{
    am_stale_run(t, true);
}

#define AM_FORGED(id_, how_, rules_, title_)                                   \
    CF_TESTA("ackm.forged." id_, "6.2", rules_, MUST, title_, am_forged,       \
             (const void *)(intptr_t)(how_))

const struct cf_test cf_t_ackm[] = {
    CF_TESTA("ackm.off.never_sent.peer", "3.15", "R-ACKM-1 R-VER-5", MUST,
             "no ACKM toward a peer that did not announce ACKM", am_never_sent,
             NULL),
    CF_TESTA("ackm.off.never_sent.iut", "3.15", "R-ACKM-1 R-VER-5", MUST,
             "no ACKM from an IUT that did not announce ACKM", am_never_sent,
             "iut"),
    CF_TEST("ackm.off.dropped", "3.15", "R-ACKM-1 R-VER-5 R-RX-5", MUST,
            "an ACKM without the feature: an unknown opcode", am_off_dropped),
    CF_TEST("ackm.records", "6.2", "R-ACKM-4 R-ACKM-2 R-ACK-1", MUST,
            "records within ack_delay, in the next ACK, never the own path",
            am_records),
    AM_FORGED("echo", AM_BAD_ECHO, "R-ACKM-5 R-ACK-6 R-VAL-1",
              "a record with a wrong echo_ts: the ACKM dropped whole"),
    AM_FORGED("path_n", AM_BAD_PATH_N, "R-ACKM-5",
              "a record of a path not below N: the ACKM dropped whole"),
    AM_FORGED("dup_path", AM_BAD_DUP, "R-ACKM-5 R-ACKM-2",
              "two records of one path: the ACKM dropped whole"),
    AM_FORGED("own_path", AM_BAD_OWN, "R-ACKM-5 R-ACKM-2",
              "a record of the own path: the ACKM dropped whole"),
    CF_TEST("ackm.forged.counted", "6.2", "R-ACKM-5 R-RX-5", SHOULD,
            "a forged ACKM counted bad_ack once", am_forged_counted),
    CF_TEST("ackm.stale.acts", "6.2", "R-ACKM-5", MUST,
            "a stale record is skipped, the rest of the ACKM acts", am_stale),
    CF_TEST("ackm.stale.counted", "6.2", "R-ACKM-5", SHOULD,
            "a stale record counted stale, the ACKM not bad_ack",
            am_stale_counted),
    {0},
};
