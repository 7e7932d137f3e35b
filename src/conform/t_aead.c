/* Section 3.14: the authenticated and encrypted modes (R-AEAD-*). The
 * agent gives the IUT's connection a fresh secret (capability "secure");
 * the suite derives the keys itself (aead.c), seals what it sends and
 * opens what the IUT sends (the monitor checks every tag, the layout and
 * the control sequence numbers). Then tampered, replayed, unsealed and
 * wrongly protected packets, each of which must be dropped silently. */
#include <string.h>

#include "conform/cf.h"

static const int sec_auth = 1, sec_enc = 2;

/* R-AEAD-1..4, R-AEAD-6: WRITEs both ways, data checked. */
static void aead_transfer(struct cf_t *t)
{
    int mode = *(const int *)t->test->arg;
    cf_open(t, &(struct cf_open){.sec = mode});
    uint8_t d[3000], got[3000];
    cf_pattern(d, sizeof(d), 101);
    cf_iut_write(t, 0, d, sizeof(d));
    cf_post(t,
            &(struct cf_wr){
                .op = "write", .wr_id = 1, .len = sizeof(d), .roff = 0x3000});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    CF_CHECK(t, !memcmp(t->p->mem + 0x3000, d, sizeof(d)),
             "the IUT's sealed WRITE did not open to its bytes");
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .len = sizeof(d), .data = d, .roff = 0x8000};
    cf_send_msg(t, &m);
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn + 2, cf_ms(t, 1000)),
             "the suite's sealed WRITE was not acknowledged");
    cf_iut_read(t, 0x8000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)),
             "the suite's sealed WRITE did not land");
    int sealed = 0;
    for (int i = 0; i < t->p->n_log; i++)
        sealed += t->p->log[i]->sealed;
    CF_CHECK(t, sealed == t->p->n_log, "%d of %d packets sealed", sealed,
             t->p->n_log);
}

/* R-AEAD-3: in the encrypted mode no payload byte travels in clear. */
static void aead_hidden(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sec = 2});
    uint8_t d[512];
    memset(d, 'Q', sizeof(d));
    cf_iut_write(t, 0, d, sizeof(d));
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = sizeof(d)});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->sealed && cf_is_data(pk, NULL))
            CF_CHECK(t, pk->prot == 1,
                     "an encrypted packet with protection "
                     "byte %u",
                     pk->prot);
    }
}

/* A one-packet WRITE at off, built and sealed with tx options x. */
static struct mroce_hdr aead_write(struct cf_t *t, uint32_t off, uint32_t seed,
                                   const struct cf_tx *x)
{
    uint8_t d[64];
    cf_pattern(d, sizeof(d), seed);
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 1);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + off;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send_x(t, &h, d, sizeof(d), x);
    return h;
}

struct tamper {
    int mode;
    struct cf_tx x;
    const char *counter, *what;
};

static const uint8_t bit = 0x40;

static const struct tamper tampers[] = {
    {1,
     {.ecn = 2,
      .no_reseal = true,
      .patch = &bit,
      .patch_off = 9,
      .patch_len = 1},
     "bad_tag",
     "a header byte changed after sealing"},
    {1,
     {.ecn = 2,
      .no_reseal = true,
      .patch = &bit,
      .patch_off = 50,
      .patch_len = 1},
     "bad_tag",
     "a payload byte changed after sealing (authenticated)"},
    {2,
     {.ecn = 2,
      .no_reseal = true,
      .patch = &bit,
      .patch_off = 50,
      .patch_len = 1},
     "bad_tag",
     "a ciphertext byte changed (encrypted)"},
    {2, {.ecn = 2, .bad_crc = true}, "bad_tag", "a tag changed"},
    {2, {.ecn = 2, .plain = true}, "sec_mode", "a packet without SEAL"},
    {2,
     {.ecn = 2, .prot = 1},
     "sec_mode",
     "an encrypted connection's packet marked not encrypted"},
    {1,
     {.ecn = 2, .prot = 2},
     "sec_mode",
     "an authenticated connection's packet marked encrypted"},
};

/* R-AEAD-8: dropped silently, nothing placed, the connection unharmed. */
static void aead_tampered(struct cf_t *t)
{
    const struct tamper *c = t->test->arg;
    cf_open(t, &(struct cf_open){.sec = c->mode});
    uint8_t before[64], after[64];
    cf_iut_read(t, 0x500, before, sizeof(before));
    int from = t->p->n_log;
    aead_write(t, 0x500, 111, &c->x);
    cf_silent(t, from, c->what);
    cf_iut_read(t, 0x500, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)), "%s was placed",
             c->what);
    cf_alive(t);
}

static void aead_tampered_counted(struct cf_t *t)
{
    const struct tamper *c = t->test->arg;
    cf_open(t, &(struct cf_open){.sec = c->mode});
    int64_t before = cf_counter(t, "conn", c->counter);
    aead_write(t, 0x500, 111, &c->x);
    CF_REQUIRE(t, cf_barrier(t, 0, cf_ms(t, 1000)), "no barrier ACK");
    cf_delta(t, "conn", c->counter, before, 1);
}

/* R-AEAD-6: a key from another secret opens nothing. */
static void aead_wrong_key(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sec = 2});
    struct cf_aead good = t->p->aead;
    uint8_t other[32];
    memcpy(other, t->iut.secret, 32);
    other[0] ^= 1;
    cf_aead_init(&t->p->aead, 2, other, t->p->my_id, t->p->iut_id);
    int from = t->p->n_log;
    aead_write(t, 0x600, 112, &(struct cf_tx){.ecn = 2});
    t->p->aead = good;
    t->p->aead.csn_tx = 0;
    cf_silent(t, from, "a WRITE sealed with a key from another secret");
}

/* R-AEAD-9: a copy of a sealed packet is a replay: dropped, not
 * recorded again. */
static void aead_replay(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sec = 1});
    uint8_t d[64], pkt[256];
    cf_pattern(d, sizeof(d), 113);
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 1);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    int hl = mroce_wire_write_hdr(&h, pkt, sizeof(pkt));
    memcpy(pkt + hl, d, sizeof(d));
    size_t n = cf_aead_seal(&t->p->aead, pkt, (size_t)hl + sizeof(d), -1);
    cf_note_sent(t->p, &h);
    cf_send_raw(t, pkt, n, NULL);
    CF_REQUIRE(t, cf_wait_sacked(t, 1, h.psn, cf_ms(t, 1000)),
               "the original was not acknowledged");
    int64_t before = cf_counter(t, "conn", "replay");
    int from = t->p->n_log;
    cf_send_raw(t, pkt, n, NULL);
    cf_silent(t, from, "a replayed sealed WRITE");
    if (before >= 0)
        CF_CHECK(t, cf_counter(t, "conn", "replay") == before + 1,
                 "the replay was not counted replay");
}

/* R-AEAD-9: 256 or more before the window's highest is refused too. */
static void aead_replay_old(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sec = 1});
    uint32_t old = t->p->psn[1];
    t->p->psn[1] += 300;
    aead_write(t, 0x700, 114, &(struct cf_tx){.ecn = 2});
    cf_pump(t, 10);
    uint32_t keep = t->p->psn[1];
    t->p->psn[1] = old; /* a never-seen PSN, but far behind */
    int from = t->p->n_log;
    aead_write(t, 0x740, 115, &(struct cf_tx){.ecn = 2});
    t->p->psn[1] = keep;
    cf_silent(t, from, "a sealed packet 300 PSNs behind its path's highest");
}

/* R-AEAD-1: a sealed packet on a connection of mode none is dropped. */
static void aead_seal_on_plain(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_aead a;
    uint8_t s[32] = {1};
    CF_REQUIRE(t, cf_aead_init(&a, 1, s, t->p->my_id, t->p->iut_id), "keys");
    t->p->aead = a;
    int from = t->p->n_log;
    aead_write(t, 0x800, 116, &(struct cf_tx){.ecn = 2});
    t->p->aead.mode = 0;
    cf_silent(t, from, "a sealed WRITE on a connection of mode none");
}

/* R-AEAD-6: a secure mode is refused when the two ids are equal. */
static void aead_equal_ids(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sec = 1, .no_connect = true});
    struct cf_params mine;
    cf_my_params(t, &mine);
    mine.conn_id = t->iut.params.conn_id;
    CF_CHECK(t, cf_connect(t, &mine) != NULL,
             "a secure connection with equal ids in both directions "
             "connected");
}

/* R-AEAD-10: encrypting leaves the sender's memory as it was. */
static void aead_source_untouched(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sec = 2});
    uint8_t d[2048], got[2048];
    cf_pattern(d, sizeof(d), 117);
    cf_iut_write(t, 0, d, sizeof(d));
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = sizeof(d)});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    cf_iut_read(t, 0, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)),
             "the source of an encrypted WRITE changed (ciphertext written "
             "into the application's memory)");
}

#define TAMPER(id, i)                                                          \
    CF_TESTA("aead.drop." id, "3.14", "R-AEAD-8 R-AEAD-3 R-AEAD-2", MUST,      \
             "a tampered or unprotected packet: dropped silently",             \
             aead_tampered, &tampers[i])
#define TAMPERC(id, i)                                                         \
    CF_TESTA("aead.drop." id ".counted", "3.14", "R-AEAD-11", SHOULD,          \
             "... counted by reason", aead_tampered_counted, &tampers[i])

const struct cf_test cf_t_aead[] = {
    CF_TESTA("aead.auth.transfer", "3.14",
             "R-AEAD-1 R-AEAD-2 R-AEAD-3 R-AEAD-4 R-AEAD-6", MUST,
             "authenticated mode: WRITEs both ways", aead_transfer, &sec_auth),
    CF_TESTA("aead.enc.transfer", "3.14",
             "R-AEAD-1 R-AEAD-2 R-AEAD-3 R-AEAD-4 R-AEAD-6", MUST,
             "encrypted mode: WRITEs both ways", aead_transfer, &sec_enc),
    CF_TEST("aead.enc.protection", "3.14", "R-AEAD-2 R-AEAD-3", MUST,
            "encrypted data packets carry the ENC protection byte",
            aead_hidden),
    TAMPER("header", 0),
    TAMPER("payload", 1),
    TAMPER("ciphertext", 2),
    TAMPER("tag", 3),
    TAMPER("unsealed", 4),
    TAMPER("prot_clear", 5),
    TAMPER("prot_set", 6),
    TAMPERC("tag", 3),
    TAMPERC("unsealed", 4),
    CF_TEST("aead.wrong_key", "3.14", "R-AEAD-6 R-AEAD-8", MUST,
            "a key from another secret opens nothing", aead_wrong_key),
    CF_TEST("aead.replay", "3.14", "R-AEAD-9 R-AEAD-11", MUST,
            "a copy of a sealed packet is dropped", aead_replay),
    CF_TEST("aead.replay.old", "3.14", "R-AEAD-9", MUST,
            "a sealed packet 256 or more PSNs behind is dropped",
            aead_replay_old),
    CF_TEST("aead.seal_on_plain", "3.14", "R-AEAD-1 R-AEAD-8", MUST,
            "a sealed packet on a connection of mode none is dropped",
            aead_seal_on_plain),
    CF_TEST("aead.equal_ids", "3.14", "R-AEAD-6", MUST,
            "a secure mode with equal ids is refused", aead_equal_ids),
    CF_TEST("aead.source_untouched", "3.14", "R-AEAD-10", MUST,
            "encryption leaves the sender's memory alone",
            aead_source_untouched),
    {0},
};
