/* Section 9: congestion control inputs. What the sender does with CE
 * marks, losses and timeouts is seen through its window (path.info);
 * the receiver's rate hint is on the wire; the hint's cap on what is in
 * flight, and the initial window shared by all paths, are counted in
 * packets on the wire. */
#include <string.h>

#include "conform/cf.h"

static json_int_t cc_cwnd(struct cf_t *t, uint16_t path)
{
    json_t *pi = cf_path_info(t, path);
    if (!pi)
        cf_skip(t, "the agent reports no path information");
    json_int_t v = json_integer_value(json_object_get(pi, "cwnd_bytes"));
    json_decref(pi);
    return v;
}

/* Grows the path's window with a few round trips, then sends one WRITE
 * and holds its ACK. */
static const struct cf_pkt *cc_warm(struct cf_t *t)
{
    for (int i = 0; i < 32; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = 100 + (uint64_t)i, .len = 1024});
    cf_wait_wc(t, "send", 131, cf_ms(t, 2000));
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 1024});
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, pk, "no WRITE");
    return pk;
}

/* R-CC-1: a new CE mark reduces the path's window. */
static void cc_ce(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    cc_warm(t);
    json_int_t before = cc_cwnd(t, 0);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.ce_count++;
    cf_send(t, &a, NULL, 0);
    cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    json_int_t after = cc_cwnd(t, 0);
    CF_CHECK(t, after < before, "window %lld before a CE mark, %lld after",
             (long long)before, (long long)after);
}

/* R-CC-1: a loss reduces the path's window. */
static void cc_loss(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 50000000});
    cc_warm(t);
    t->p->auto_ack = true;
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 33), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_send_ack(t, 0);
    cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    json_int_t before = cc_cwnd(t, 0);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 2048});
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "SUCCESS");
    json_int_t after = cc_cwnd(t, 0);
    CF_CHECK(t, after < before, "window %lld before a loss, %lld after",
             (long long)before, (long long)after);
}

/* R-CC-1: an RTO reduces the path's window. */
static void cc_timeout(struct cf_t *t)
{
    json_int_t before = 0, timeouts = 0;
    /* a busy host may make the warm-up lose packets and leave the window
     * at its floor, where no decrease shows: warm up again then */
    for (int tries = 0; tries < 3 && before <= 2 * 1100; tries++) {
        if (tries)
            cf_close(t);
        cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 3000000});
        cc_warm(t);
        before = cc_cwnd(t, 0);
    }
    CF_REQUIRE(t, before > 2 * 1100, "the window stayed at %lld bytes",
               (long long)before);
    for (int i = 0; i < 100 && !timeouts; i++) {
        cf_pump(t, 5);
        json_t *pi = cf_path_info(t, 0);
        timeouts = json_integer_value(json_object_get(pi, "timeouts"));
        json_decref(pi);
    }
    CF_REQUIRE(t, timeouts, "no RTO in 500 ms of silence");
    json_int_t after = cc_cwnd(t, 0);
    CF_CHECK(t, after < before, "window %lld before an RTO, %lld after",
             (long long)before, (long long)after);
}

/* R-CC-2: the hint of a sole sender is the receiver's capacity, the same
 * on every path's ACK. */
static void cc_hint(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.link_mbps = 40000});
    for (int i = 0; i < 8; i++) {
        struct cf_msg m = {.op = MROCE_OP_WRITE,
                           .len = 16,
                           .data = "rate-hint-please",
                           .path = i % 4};
        cf_send_msg(t, &m);
    }
    cf_pump(t, 10);
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_ACK)
            continue;
        n++;
        CF_CHECK(t, pk->h.rate_mbps == 40000,
                 "an ACK for path %u carries a hint of %u Mbit/s, the sole "
                 "sender of a 40000 Mbit/s receiver",
                 pk->h.path, pk->h.rate_mbps);
    }
    CF_REQUIRE(t, n, "no ACKs");
}

/* R-CC-2 (MUST part): one value per connection, whatever the path. */
static void cc_hint_connwide(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.link_mbps = 25000});
    for (int i = 0; i < 4; i++) {
        struct cf_msg m = {.op = MROCE_OP_WRITE,
                           .len = 16,
                           .data = "rate-hint-please",
                           .path = i};
        cf_send_msg(t, &m);
    }
    cf_pump(t, 10);
    uint32_t v = UINT32_MAX;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_ACK)
            continue;
        if (v == UINT32_MAX)
            v = pk->h.rate_mbps;
        CF_CHECK(t, pk->h.rate_mbps == v,
                 "ACKs of one connection carry hints %u and %u", v,
                 pk->h.rate_mbps);
    }
}

/* R-CC-2 (SHOULD): two connections delivering share the capacity. */
static void cc_hint_share(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.link_mbps = 40000});
    uint32_t id2 = cf_second_conn(t);
    uint32_t min = UINT32_MAX;
    for (int round = 0; round < 4; round++) {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, 0);
        h.conn = id2; /* the second connection's data: it delivers too */
        h.psn = (uint32_t)round;
        h.dsn = (uint32_t)round;
        h.msn = (uint32_t)round;
        h.msg_len = 0;
        h.flags = MROCE_HF_ACKREQ;
        cf_send(t, &h, NULL, 0);
        struct cf_msg m = {.op = MROCE_OP_WRITE,
                           .len = 16,
                           .data = "share-the-link!!",
                           .path = 0};
        cf_send_msg(t, &m);
        uint16_t path = 0;
        const struct cf_pkt *a =
            cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 500));
        if (a && a->h.conn == t->p->my_id && a->h.rate_mbps < min)
            min = a->h.rate_mbps;
    }
    CF_CHECK(t, min <= 20000,
             "hint %u Mbit/s with two connections "
             "delivering to a 40000 Mbit/s receiver",
             min);
}

/* R-CC-3 (SHOULD): a small hint caps what is in flight near one mtu.
 * The suite holds its ACKs 3 ms and counts what arrives meanwhile. */
static void cc_hint_cap(struct cf_t *t)
{
    int most = cf_held_burst(t, 0);
    CF_CHECK(t, most <= 3,
             "%d data packets in flight at once under a "
             "1 Mbit/s hint",
             most);
}

static int cc_burst(struct cf_t *t, uint16_t paths)
{
    cf_open(t, &(struct cf_open){.n_paths = paths,
                                 .src_ports = paths,
                                 .init_cwnd_pkts = 16,
                                 .min_rto_ns = 60000000});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 512 * 1024});
    cf_pump(t, 40);
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++)
        n += cf_is_data(t->p->log[i], NULL);
    cf_close(t);
    return n;
}

/* R-CC-4: the first burst does not grow with the number of paths: an
 * initial window of 16 packets over 64 paths (where each path may always
 * send one packet) is still 16 packets. */
static void cc_init_window(struct cf_t *t)
{
    int one = cc_burst(t, 1);
    int many = cc_burst(t, 64);
    CF_CHECK(t, one > 0 && many <= one && many <= 16,
             "first burst %d packets over 64 paths, %d over 1 path "
             "(init_cwnd_pkts 16)",
             many, one);
}

const struct cf_test cf_t_cc[] = {
    CF_TEST("cc.ce", "9.1", "R-CC-1 R-ACK-7", MUST,
            "a CE mark reduces the path's window", cc_ce),
    CF_TEST("cc.loss", "9.1", "R-CC-1", MUST,
            "a loss reduces the path's window", cc_loss),
    CF_TEST("cc.timeout", "9.1", "R-CC-1 R-RTT-6", MUST,
            "an RTO reduces the path's window", cc_timeout),
    CF_TEST("cc.hint.value", "9.1", "R-CC-2", SHOULD,
            "a sole sender gets the receiver's whole capacity", cc_hint),
    CF_TEST("cc.hint.connwide", "9.1", "R-CC-2", MUST,
            "one hint per connection on every path", cc_hint_connwide),
    CF_TEST("cc.hint.share", "9.1", "R-CC-2", SHOULD,
            "two delivering connections share the capacity", cc_hint_share),
    CF_TEST("cc.hint.cap", "9.1", "R-CC-3", SHOULD,
            "a small hint keeps about one mtu in flight", cc_hint_cap),
    CF_TEST("cc.init_window", "9.1", "R-CC-4", MUST,
            "the first burst is the connection's, whatever the paths",
            cc_init_window),
    {0},
};
