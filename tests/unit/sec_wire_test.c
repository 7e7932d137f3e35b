/* Attacks of issue 15 that need two real engines: A and B connected over
 * the test wire (src/io/testwire), and an attacker that knows the
 * connection ids (every packet carries them in clear) and, where said,
 * what the connection manager exchanges in clear (a memory key and
 * address), and injects packets with the other side's source address.
 * The attacker guesses sequence numbers the way they were before the
 * random starts of R-CONN-5 (from 0); each test checks that the transfer
 * completes with exact data and that both sides stay CONNECTED. The last
 * test shows what an on-path attacker, who reads one packet, can still
 * do without the authenticated modes (R-SEC-1). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "io/testwire/testwire.h"
#include "io/testwire/twloop.h"
#include "wire/wire.h"

#define US 1000ull
#define MS 1000000ull
#define MSG 4096
#define N_MSG 64
#define MEM (N_MSG * MSG)
#define A 0
#define B 1

struct env {
    struct mroce_twloop_pair *p;
    uint8_t *mem[2];
    struct mroce_mr *mr[2];
    uint32_t id[2]; /* the connection id packets to side i carry */
    int posted, done, failed;
    uint64_t forged;
};

static struct env *env_open(uint16_t paths, double loss, uint64_t seed)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    struct mroce_twloop_pair_cfg c;
    memset(&c, 0, sizeof(c));
    c.wire.seed = seed;
    c.wire.delay_ns = 2 * US;
    c.wire.loss = loss;
    for (int s = 0; s < 2; s++) {
        c.ctx[s].mtu = 1024;
        c.ctx[s].seed = seed * 2 + (uint64_t)s + 1;
        c.conn[s].n_paths = paths;
        c.conn[s].sq_depth = N_MSG;
        c.conn[s].rq_depth = N_MSG;
    }
    assert_int_equal(mroce_twloop_pair_create(&c, &e->p), 0);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    for (int s = 0; s < 2; s++) {
        e->mem[s] = malloc(MEM);
        assert_non_null(e->mem[s]);
        for (size_t i = 0; i < MEM; i++)
            e->mem[s][i] = (uint8_t)(i * 7 + (size_t)s * 101 + 3);
        assert_int_equal(
            mroce_reg_mr(e->p->pd[s], e->mem[s], MEM, acc, &e->mr[s]), 0);
        struct mroce_conn_params prm;
        mroce_conn_get_params(e->p->conn[s], &prm);
        e->id[s] = prm.conn_id;
    }
    return e;
}

static void env_close(struct env *e)
{
    mroce_twloop_pair_destroy(e->p);
    free(e->mem[0]);
    free(e->mem[1]);
    free(e);
}

/* The attacker: a packet into side `to`, from the other side's address. */
static void inject(struct env *e, int to, const struct mroce_hdr *h,
                   const void *payload, uint32_t len)
{
    uint8_t buf[MROCE_MAX_HDR_LEN + 2048 + MROCE_ICRC_LEN];
    int hl = mroce_wire_write_hdr(h, buf, MROCE_MAX_HDR_LEN);
    assert_true(hl > 0);
    if (len)
        memcpy(buf + hl, payload, len);
    size_t n = mroce_wire_seal(buf, (size_t)hl + len);
    struct mroce_pkt_meta m = {.src = e->p->addr[1 - to],
                               .dst = e->p->addr[to],
                               .src_port = 50123,
                               .dst_port = MROCE_UDP_PORT,
                               .ecn = MROCE_ECN_ECT0};
    mroce_ctx_rx(e->p->ctx[to], mroce_twloop_now(e->p->loop), &m, buf, n);
    e->forged++;
}

/* A WRITE of message k: A's slice k to B's slice k. */
static void post_write(struct env *e, int k)
{
    struct mroce_send_wr w = {.wr_id = (uint64_t)k};
    w.sge.addr = (uint64_t)(uintptr_t)(e->mem[A] + (size_t)k * MSG);
    w.sge.length = MSG;
    w.sge.lkey = mroce_mr_lkey(e->mr[A]);
    w.remote_addr = (uint64_t)(uintptr_t)(e->mem[B] + (size_t)k * MSG);
    w.rkey = mroce_mr_rkey(e->mr[B]);
    assert_int_equal(mroce_post_write(e->p->conn[A], &w), 0);
    e->posted++;
}

static void poll_a(struct env *e)
{
    struct mroce_wc wc[16];
    int n;
    while ((n = mroce_poll_cq(e->p->cq[A], 16, wc)) > 0)
        for (int i = 0; i < n; i++) {
            e->done++;
            e->failed += wc[i].status != MROCE_WC_SUCCESS;
        }
}

/* Every WRITE completed with SUCCESS, B's memory holds exactly A's bytes,
 * and both sides are still CONNECTED. */
static void assert_exact(struct env *e)
{
    assert_int_equal(e->failed, 0);
    assert_int_equal(e->done, e->posted);
    assert_memory_equal(e->mem[B], e->mem[A], (size_t)e->posted * MSG);
    for (int s = 0; s < 2; s++)
        assert_int_equal(mroce_conn_state(e->p->conn[s]), MROCE_CONN_CONNECTED);
}

/* ---- the attacks ---- */

/* Attack hook called after every pass; returns nonzero to stop. */
struct run {
    struct env *e;
    void (*attack)(struct run *r);
    uint64_t i; /* attack steps so far */
    int keep_posting;
};

static int step(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct run *r = arg;
    struct env *e = r->e;
    if (r->attack)
        r->attack(r);
    poll_a(e);
    if (mroce_conn_state(e->p->conn[A]) != MROCE_CONN_CONNECTED ||
        mroce_conn_state(e->p->conn[B]) != MROCE_CONN_CONNECTED)
        return 1;
    while (r->keep_posting && e->posted < N_MSG && e->posted - e->done < 8)
        post_write(e, e->posted);
    return e->posted == N_MSG && e->done == e->posted;
}

static void run(struct run *r, uint64_t deadline)
{
    mroce_twloop_run_until(r->e->p->loop, step, r, deadline);
    poll_a(r->e);
}

/* 16 forged PROBEs, one per path of B, at a PSN ahead of where A's paths
 * start (1000): they moved B's SACK anchors, every ACK of B then named a
 * PSN A never sent, A ignored them all and declared B dead after 255
 * RTOs (127.5 ms), with B healthy all along. A transfer paced over 300 ms
 * of virtual time shows that it goes on now. */
static void probes_attack(struct run *r)
{
    if (r->i++)
        return;
    for (uint16_t p = 0; p < 16; p++) {
        struct mroce_hdr h = {.opcode = MROCE_OP_PROBE,
                              .flags = MROCE_HF_ACKREQ | MROCE_HF_RETX,
                              .path = p,
                              .conn = r->e->id[B],
                              .psn = 1000};
        inject(r->e, B, &h, NULL, 0);
    }
}

static void test_forged_probes_kill(void **state)
{
    (void)state;
    struct env *e = env_open(16, 0, 1);
    struct run r = {.e = e, .attack = probes_attack};
    for (int k = 0; k < N_MSG; k++) { /* one WRITE every 5 ms */
        mroce_twloop_run_until(e->p->loop, step, &r, (uint64_t)k * 5 * MS);
        if (mroce_conn_state(e->p->conn[A]) == MROCE_CONN_CONNECTED)
            post_write(e, k);
    }
    run(&r, 400 * MS);
    assert_exact(e);
    assert_true(mroce_twloop_now(e->p->loop) > 300 * MS);
    struct mroce_conn_counters c;
    mroce_conn_get_counters(e->p->conn[B], &c);
    assert_int_equal(c.drop_psn_window, 16);
    env_close(e);
}

/* One zero-length READ request without a key, into A as from B at DSN 0,
 * MSN 0: A used to answer it, B found a response to no READ of its own,
 * NACKed it fatally, and both sides went to ERROR. */
static void empty_read_attack(struct run *r)
{
    if (r->i++)
        return;
    struct mroce_hdr h = {.opcode = MROCE_OP_READ_REQ,
                          .flags = MROCE_HF_ACKREQ,
                          .conn = r->e->id[A]};
    inject(r->e, A, &h, NULL, 0);
}

static void test_forged_empty_read(void **state)
{
    (void)state;
    struct env *e = env_open(4, 0, 2);
    struct run r = {.e = e, .attack = empty_read_attack, .keep_posting = 1};
    run(&r, 200 * MS);
    assert_exact(e);
    struct mroce_conn_counters c;
    mroce_conn_get_counters(e->p->conn[A], &c);
    assert_int_equal(c.drop_dsn_window, 1);
    env_close(e);
}

/* Forged ACKs into A as from B, under 2% loss, one per pass: every path,
 * SACK anchors 0..63, all bits set, dsn_cum sweeping 0..4095. Before
 * R-VAL-1 they made A complete messages whose packets were lost (about
 * 149 in the black-box run), which B never received. */
static void ack_sweep_attack(struct run *r)
{
    for (int k = 0; k < 32; k++) {
        uint64_t i = r->i++;
        struct mroce_hdr h = {.opcode = MROCE_OP_ACK,
                              .path = (uint16_t)(i % 4),
                              .conn = r->e->id[A],
                              .sack_high = (uint32_t)(i / 4 % 64),
                              .dsn_cum = (uint32_t)(i % 4096),
                              .echo_ts =
                                  (uint32_t)mroce_twloop_now(r->e->p->loop),
                              .rx_count = (uint16_t)i};
        memset(h.sack, 0xff, sizeof(h.sack));
        inject(r->e, A, &h, NULL, 0);
    }
}

static void test_blind_ack_sweep_under_loss(void **state)
{
    (void)state;
    struct env *e = env_open(4, 0.02, 3);
    struct run r = {.e = e, .attack = ack_sweep_attack, .keep_posting = 1};
    run(&r, 2000 * MS);
    assert_exact(e);
    assert_true(r.i > 1000);
    struct mroce_conn_counters c;
    mroce_conn_get_counters(e->p->conn[A], &c);
    assert_true(c.drop_bad_ack >= r.i);
    env_close(e);
}

/* A blind injection: the attacker knows B's memory key and address (the
 * connection manager sends them in clear) and writes its own bytes there
 * as WRITEs from A, for every DSN and MSN an engine starting at 0 would
 * use for the transfer. They used to take the real packets' DSNs: B kept
 * the attacker's bytes and A's WRITEs completed with SUCCESS. */
static void blind_inject_one(struct run *r, uint32_t d)
{
    static uint8_t evil[1024];
    memset(evil, 0x66, sizeof(evil));
    struct mroce_hdr h = {.opcode = MROCE_OP_WRITE,
                          .path = (uint16_t)(d % 4),
                          .conn = r->e->id[B],
                          .psn = d / 4,
                          .dsn = d,
                          .msn = d / 4,
                          .msg_len = MSG,
                          .offset = d % 4 * 1024,
                          .rkey = mroce_mr_rkey(r->e->mr[B])};
    h.va = (uint64_t)(uintptr_t)(r->e->mem[B] + (size_t)(d / 4) * MSG);
    inject(r->e, B, &h, evil, sizeof(evil));
}

/* all of them first, ahead of A's real packets */
static void blind_inject_attack(struct run *r)
{
    while (r->i < 4 * N_MSG)
        blind_inject_one(r, (uint32_t)r->i++);
}

static void test_blind_injection(void **state)
{
    (void)state;
    struct env *e = env_open(4, 0, 4);
    struct run r = {.e = e, .attack = blind_inject_attack, .keep_posting = 1};
    run(&r, 200 * MS);
    assert_exact(e);
    struct mroce_conn_counters c;
    mroce_conn_get_counters(e->p->conn[B], &c);
    assert_true(c.drop_dsn_window >= 4 * N_MSG);
    env_close(e);
}

/* What remains without the authenticated modes (R-SEC-1): an attacker who
 * reads one packet of A (here the first WRITE packet, tapped off the
 * wire) knows where A's numbers are and can win the race against A's own
 * next packet: B keeps the forged bytes and A's WRITE completes. This
 * proves the blind test's forgeries would have worked with the numbers. */
struct sniff {
    struct env *e;
    int seen;
    struct mroce_hdr first;
};

static void sniff_tap(void *ud, uint64_t now, int from,
                      const struct mroce_pkt_meta *meta, const uint8_t *buf,
                      size_t len)
{
    (void)now;
    (void)meta;
    struct sniff *s = ud;
    struct mroce_hdr h;
    if (s->seen || from != A || mroce_wire_decode(buf, len, &h) ||
        h.opcode != MROCE_OP_WRITE)
        return;
    s->seen = 1;
    s->first = h;
    /* the next DSN, which A sends a moment later on the wire */
    h.dsn++;
    h.offset += 1024;
    static uint8_t evil[1024];
    memset(evil, 0x66, sizeof(evil));
    inject(s->e, B, &h, evil, sizeof(evil));
}

static void test_sniffed_injection_is_onpath(void **state)
{
    (void)state;
    struct env *e = env_open(4, 0, 5);
    struct sniff s = {.e = e};
    mroce_twloop_set_tap(e->p->loop, sniff_tap, &s);
    post_write(e, 0);
    struct run r = {.e = e};
    run(&r, 200 * MS);
    assert_true(s.seen);
    assert_int_equal(e->done, 1);
    assert_int_equal(e->failed, 0); /* A believes it all arrived */
    assert_memory_not_equal(e->mem[B], e->mem[A], MSG);
    assert_int_equal(e->mem[B][1024], 0x66);
    env_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forged_probes_kill),
        cmocka_unit_test(test_forged_empty_read),
        cmocka_unit_test(test_blind_ack_sweep_under_loss),
        cmocka_unit_test(test_blind_injection),
        cmocka_unit_test(test_sniffed_injection_is_onpath),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
