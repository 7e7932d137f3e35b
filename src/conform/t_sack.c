/* Section 6.1: the receiver's per-path SACK state, checked against the
 * suite's model of R-SACK-4..7 (cf_rx_model) after every packet: in
 * order, gaps, late fills, duplicates, too old, shifts at every word
 * boundary and past 256; what is and is not recorded; the counters; and
 * the sender's PSN window of 256. */
#include <string.h>

#include "conform/cf.h"

struct ack_rx {
    uint16_t path;
    uint16_t rx_count;
};

static bool sack_is_ack(const struct cf_pkt *pk, const void *arg)
{
    const struct ack_rx *a = arg;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK && pk->h.path == a->path &&
           pk->h.rx_count == a->rx_count;
}

/* The ACK of path `path` that reports the model's rx_count. */
static const struct cf_pkt *sack_ack(struct cf_t *t, uint16_t path,
                                     const struct cf_rxpath *m)
{
    struct ack_rx a = {path, m->rx_count};
    return cf_wait(t, sack_is_ack, &a, cf_ms(t, 1000));
}

/* The IUT's ACK agrees with the model in every field of R-ACK-2 that
 * the path state gives. */
static bool sack_same(struct cf_t *t, const struct cf_pkt *pk,
                      const struct cf_rxpath *m, const char *after)
{
    if (!pk)
        return cf_fail(t, "no ACK with rx_count %u after %s", m->rx_count,
                       after);
    const struct mroce_hdr *h = &pk->h;
    bool ok = CF_CHECK(t, h->sack_high == m->high,
                       "after %s: sack_high %u, expected %u", after,
                       h->sack_high, m->high);
    ok &= CF_CHECK(
        t, !memcmp(h->sack, m->bits, sizeof(h->sack)),
        "after %s: bitmap %016llx %016llx.., expected %016llx "
        "%016llx..",
        after, (unsigned long long)h->sack[0], (unsigned long long)h->sack[1],
        (unsigned long long)m->bits[0], (unsigned long long)m->bits[1]);
    ok &=
        CF_CHECK(t, h->echo_ts == m->echo, "after %s: echo_ts %u, expected %u",
                 after, h->echo_ts, m->echo);
    ok &= CF_CHECK(t, h->ce_count == m->ce_count,
                   "after %s: ce_count %u, expected %u", after, h->ce_count,
                   m->ce_count);
    return ok;
}

struct sack_ev {
    uint32_t psn;
    uint8_t ecn;
};

/* Accepted WRITEs (ACKREQ: one ACK each) through the model: in order,
 * gaps, late fills, a PSN twice, too old, every word boundary, past 256. */
static void sack_model(struct cf_t *t)
{
    static const struct sack_ev ev[] = {
        {0, 2},   {1, 2},   {2, 3},   {5, 2},    {3, 2},    {3, 2},
        {4, 3},   {6, 2},   {70, 2},  {69, 2},   {68, 3},   {130, 2},
        {129, 2}, {200, 2}, {260, 2}, {600, 3},  {400, 2},  {300, 2},
        {601, 2}, {857, 2}, {856, 2}, {602, 2},  {601, 3},  {858, 2},
        {921, 2}, {922, 2}, {985, 2}, {1049, 2}, {1050, 2}, {1049, 2},
    };
    cf_open(t, NULL);
    struct cf_rxpath m = {0};
    char what[64];
    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
        uint32_t ts = 0x10000000u + (uint32_t)i * 977;
        cf_write_at(t, 1, ev[i].psn, ts, ev[i].ecn);
        cf_rx_model(&m, ev[i].psn, ts, ev[i].ecn, CF_REC_DATA);
        snprintf(what, sizeof(what), "PSN %u (event %zu)", ev[i].psn, i);
        if (!sack_same(t, sack_ack(t, 1, &m), &m, what))
            break;
    }
    t->p->psn[1] = 1051;
}

/* R-PATH-9, R-VAL-2, R-VAL-4: a PROBE is recorded only at its path's next
 * PSN, and answered at once either way by an ACK whose MTH psn names it. */
static void sack_probes(struct cf_t *t)
{
    static const struct sack_ev ev[] = {
        {0, 2}, {1, 3},   {5, 2}, {2, 2},           {2, 2}, {1, 2},
        {3, 3}, {300, 2}, {4, 2}, {0xFFFFFFF0u, 2}, {5, 2}, {6, 3},
    };
    cf_open(t, NULL);
    struct cf_rxpath m = {0};
    char what[64];
    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 1);
        h.psn = ev[i].psn;
        h.flags = MROCE_HF_ACKREQ;
        h.ts = 0x20000000u + (uint32_t)i * 991;
        int from = t->p->n_log;
        cf_send_x(t, &h, NULL, 0, &(struct cf_tx){.ecn = ev[i].ecn});
        int r = cf_rx_model(&m, h.psn, h.ts, ev[i].ecn, CF_REC_PROBE);
        snprintf(what, sizeof(what), "a PROBE with PSN %u (event %zu, %s)",
                 h.psn, i,
                 r == CF_RX_NOT_RECORDED ? "not its path's next PSN"
                                         : "the next PSN");
        uint16_t path = 1;
        const struct cf_pkt *pk =
            cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
        if (!CF_CHECK(t, pk, "no ACK for %s", what))
            break;
        CF_CHECK(t, pk->h.psn == h.psn, "the ACK for %s has MTH psn %u", what,
                 pk->h.psn);
        CF_CHECK(t, pk->h.rx_count == m.rx_count,
                 "after %s: rx_count %u, expected %u", what, pk->h.rx_count,
                 m.rx_count);
        if (!sack_same(t, pk, &m, what))
            break;
        cf_pump(t, 0);
        CF_CHECK(t, cf_count(t, from, MROCE_OP_ACK) == 1, "%d ACKs for %s",
                 cf_count(t, from, MROCE_OP_ACK), what);
    }
    t->p->psn[1] = m.high + 1;
}

/* Data packets through the model: WRITEs on path 2 out of order. */
static void sack_data(struct cf_t *t)
{
    cf_open(t, NULL);
    static const uint32_t order[] = {0, 1, 3, 2, 7, 4, 6, 5};
    uint8_t d[8] = {9};
    struct cf_rxpath m = {0};
    char what[64];
    for (int i = 0; i < 8; i++) {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, 2);
        h.psn = order[i];
        h.dsn = order[i];
        h.msn = order[i];
        h.msg_len = 8;
        h.va = t->iut.va + 8 * order[i];
        h.rkey = t->iut.rkey;
        h.flags = MROCE_HF_ACKREQ;
        cf_send(t, &h, d, sizeof(d));
        cf_rx_model(&m, h.psn, h.ts, 2, CF_REC_DATA);
        snprintf(what, sizeof(what), "a WRITE with PSN %u", h.psn);
        const struct cf_pkt *pk = sack_ack(t, 2, &m);
        if (!sack_same(t, pk, &m, what))
            break;
    }
    t->p->psn[2] = 8;
    t->p->dsn = 8;
    t->p->msn[0] = 8;
}

/* R-SACK-6: refused and dropped data are not recorded. */
static void sack_not_recorded(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_rxpath m = {0};
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 1);
    h.psn = 0;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, NULL, 0);
    cf_rx_model(&m, 0, h.ts, 2, CF_REC_PROBE);
    sack_same(t, sack_ack(t, 1, &m), &m, "PSN 0");
    /* PSN 1: a SEND without a receive (RNR) */
    struct mroce_hdr s = cf_hdr(t, MROCE_OP_SEND, 1);
    s.psn = 1;
    s.dsn = cf_next_dsn(t);
    s.msn = t->p->msn[0]++;
    s.ssn = t->p->ssn[0]++;
    s.msg_len = 4;
    s.flags = MROCE_HF_ACKREQ;
    cf_send(t, &s, "rnr!", 4);
    CF_CHECK(t, cf_wait_nack(t, cf_ms(t, 1000)) != NULL, "no RNR NACK");
    /* PSN 2: a WRITE beyond the DSN window */
    struct mroce_hdr w = cf_hdr(t, MROCE_OP_WRITE, 1);
    w.psn = 2;
    w.dsn = t->p->dsn + t->iut.params.dsn_window + 5;
    w.msn = t->p->msn[0];
    w.msg_len = 4;
    w.va = t->iut.va;
    w.rkey = t->iut.rkey;
    w.flags = MROCE_HF_ACKREQ;
    cf_send(t, &w, "far!", 4);
    /* PSN 3: an accepted WRITE (recorded at any PSN, R-VAL-2) */
    uint32_t ts = h.ts + 1000;
    cf_write_at(t, 1, 3, ts, 2);
    cf_rx_model(&m, 3, ts, 2, CF_REC_DATA);
    sack_same(t, sack_ack(t, 1, &m), &m,
              "a refused SEND (PSN 1) and an out-of-window WRITE (PSN 2)");
    t->p->psn[1] = 4;
}

/* R-SACK-7: counts per path, of recorded packets only. */
static void sack_counts(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_rxpath m[2] = {{0}};
    for (uint32_t i = 0; i < 12; i++) {
        uint16_t path = (uint16_t)(1 + i % 2);
        uint8_t ecn = i % 3 == 0 ? 3 : 2;
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, path);
        h.psn = i / 2;
        h.flags = MROCE_HF_ACKREQ;
        cf_send_x(t, &h, NULL, 0, &(struct cf_tx){.ecn = ecn});
        cf_rx_model(&m[path - 1], h.psn, h.ts, ecn, CF_REC_PROBE);
        const struct cf_pkt *pk = sack_ack(t, path, &m[path - 1]);
        if (!pk) {
            cf_fail(t, "no ACK for path %u with rx_count %u", path,
                    m[path - 1].rx_count);
            break;
        }
        CF_CHECK(t, pk->h.ce_count == m[path - 1].ce_count,
                 "path %u ce_count %u, expected %u", path, pk->h.ce_count,
                 m[path - 1].ce_count);
    }
    t->p->psn[1] = t->p->psn[2] = 6;
}

/* R-ENC-6: CE on the other control packets is not counted. */
static void sack_ce_control(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 2000});
    t->p->auto_ack = false;
    for (int i = 0; i < 2; i++) {
        CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)),
                   "no data from the IUT");
        struct mroce_hdr a;
        cf_ack_fill(t, 0, &a);
        cf_send_x(t, &a, NULL, 0, &(struct cf_tx){.ecn = 3});
    }
    struct mroce_hdr c = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    cf_send_x(t, &c, NULL, 0, &(struct cf_tx){.ecn = 3});
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 0);
    h.psn = cf_next_psn(t, 0);
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, NULL, 0);
    uint16_t path = 0;
    const struct cf_pkt *pk = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
    CF_REQUIRE(t, pk, "no ACK for a PROBE");
    CF_CHECK(t, pk->h.ce_count == 0 && pk->h.rx_count == 1,
             "ce_count %u rx_count %u after CE-marked ACKs and CLOSE_ACK, "
             "expected 0 and 1",
             pk->h.ce_count, pk->h.rx_count);
}

/* R-SACK-3: never more than 256 PSNs of a path unresolved. */
static void sack_psn_window(struct cf_t *t)
{
    /* an RTO would resolve them all: keep it far (250 ms) */
    cf_open(t, &(struct cf_open){.mtu = 256,
                                 .n_paths = 1,
                                 .init_cwnd_pkts = 4096,
                                 .max_conn_cwnd_pkts = 4096,
                                 .min_rto_ns = 50000000});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 400 * 256});
    cf_pump(t, 60);
    uint32_t max = 0;
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr ||
            (!cf_is_data(pk, NULL) && pk->h.opcode != MROCE_OP_PROBE))
            continue;
        n++;
        if (pk->h.psn - cf_iut_psn(t, 0) + 1 > max)
            max = pk->h.psn - cf_iut_psn(t, 0) + 1;
    }
    CF_CHECK(t, n > 0 && max <= 256,
             "PSNs 0..%u sent with none resolved (at most 256 may be)",
             max - 1);
    if (n < 200)
        cf_note(t, "only %d packets went out: the window was not reached", n);
}

const struct cf_test cf_t_sack[] = {
    CF_TEST("sack.model.events", "6.1",
            "R-SACK-1 R-SACK-4 R-SACK-5 R-SACK-7 R-ACK-2 R-VAL-2", MUST,
            "30 PSN events through the receiver's path state", sack_model),
    CF_TEST("sack.model.probes", "6.1",
            "R-PATH-9 R-VAL-2 R-VAL-4 R-SACK-6 R-ACK-5", MUST,
            "a PROBE is recorded only at the next PSN, always answered",
            sack_probes),
    CF_TEST("sack.model.data", "6.1", "R-SACK-5 R-SACK-6 R-ORD-2", MUST,
            "data out of order through the receiver's path state", sack_data),
    CF_TEST("sack.not_recorded", "6.1", "R-SACK-6 R-RETRY-3 R-DSN-6", MUST,
            "refused and out-of-window data are not recorded",
            sack_not_recorded),
    CF_TEST("sack.counts", "6.1", "R-SACK-7 R-ENC-6", MUST,
            "rx_count and ce_count per path", sack_counts),
    CF_TEST("sack.ce_control", "2", "R-ENC-6", MUST,
            "CE on ACKs and CLOSE_ACKs is not counted", sack_ce_control),
    CF_TEST("sack.psn_window", "6.1", "R-SACK-3 R-CC-1", MUST,
            "at most 256 unresolved PSNs per path", sack_psn_window),
    {0},
};
