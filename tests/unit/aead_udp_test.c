/* The secure modes (docs/spec.md section 3.14) over the UDP datapath on
 * real sockets: two datapaths in this process on 127.0.0.1 (and ::1),
 * their contexts given the default crypto provider by the datapath. Every
 * operation (WRITE, WRITE_IMM, SEND, SEND_IMM, READ) in the authenticated
 * and the encrypted mode, data checked byte for byte; the same under 3%
 * loss and 2% duplication (duplicates refused as replays); and datagrams
 * forged from a plain socket (unsealed with a good ICRC, sealed with a
 * made-up tag, a captured packet replayed) dropped and counted while a
 * transfer completes. Every wait is bounded. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#include "wire/aead.h"

#define MS 1000000ull
#define MIB (1024u * 1024u)
#define WC_MAX 1024
#define ALL_ACCESS                                                             \
    (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                    \
     MROCE_ACCESS_REMOTE_READ)

struct side {
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    uint8_t *mem;
    struct mroce_mr *mr;
    uint16_t port;
    struct mroce_wc wc[WC_MAX];
    int n_wc;
};

struct fix {
    struct side s[2];
};

static struct fix *g_fix;
static const uint8_t secret[MROCE_SECRET_LEN] = {9, 8, 7, 6, 5, 4, 3, 2, 1};

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

static int side_open(struct side *s, const char *ip, int idx,
                     const struct mroce_impair *imp)
{
    struct mroce_dp_attr a;
    memset(&a, 0, sizeof(a));
    a.kind = MROCE_DP_UDP;
    a.local_ip = ip;
    a.impair = *imp;
    a.impair.seed = imp->seed * 2 + (uint64_t)idx + 1;
    a.ctx.mtu = 4096;
    int rc = MROCE_ESTATE;
    for (int t = 0; t < 50 && rc == MROCE_ESTATE; t++) {
        a.port = (uint16_t)(20000 + (unsigned)rand() % 12000);
        rc = mroce_dp_create(&a, &s->dp);
    }
    if (rc < 0)
        return rc;
    s->port = a.port;
    s->ctx = mroce_dp_ctx(s->dp);
    assert_int_equal(mroce_pd_alloc(s->ctx, &s->pd), 0);
    assert_int_equal(mroce_cq_create(s->ctx, WC_MAX, &s->cq), 0);
    s->mem = malloc(4 * MIB);
    assert_non_null(s->mem);
    assert_int_equal(mroce_reg_mr(s->pd, s->mem, 4 * MIB, ALL_ACCESS, &s->mr),
                     0);
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_paths = 8,
                                 .min_rto_ns = 10 * MS};
    assert_int_equal(mroce_conn_create(s->pd, &ca, &s->conn), 0);
    return 0;
}

static void fix_free(struct fix *f)
{
    if (!f)
        return;
    for (int i = 0; i < 2; i++) {
        mroce_dp_destroy(f->s[i].dp);
        free(f->s[i].mem);
    }
    free(f);
}

/* Both sides connected in `mode`; NULL if the address family is not
 * available here. */
static struct fix *fix_new(const char *ip, int mode,
                           const struct mroce_impair *imp)
{
    struct fix *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    g_fix = f;
    for (int i = 0; i < 2; i++) {
        int rc = side_open(&f->s[i], ip, i, imp);
        if (rc == MROCE_EINVAL && i == 0) {
            fix_free(f);
            g_fix = NULL;
            return NULL;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(
            mroce_conn_set_secret(f->s[i].conn, mode, secret, sizeof(secret)),
            0);
    }
    struct mroce_conn_params p0, p1;
    mroce_conn_get_params(f->s[0].conn, &p0);
    mroce_conn_get_params(f->s[1].conn, &p1);
    assert_int_equal(mroce_conn_connect(f->s[0].conn, &p1), 0);
    assert_int_equal(mroce_conn_connect(f->s[1].conn, &p0), 0);
    return f;
}

static int teardown(void **state)
{
    (void)state;
    fix_free(g_fix);
    g_fix = NULL;
    return 0;
}

static void pump(struct fix *f)
{
    int moved = 0;
    for (int i = 0; i < 2; i++) {
        struct side *s = &f->s[i];
        int rc = mroce_progress(s->dp);
        assert_true(rc >= 0);
        moved += rc;
        int n = mroce_poll_cq(s->cq, 64, s->wc + s->n_wc);
        assert_true(n >= 0);
        s->n_wc += n;
        assert_true(s->n_wc < WC_MAX - 64);
    }
    if (!moved)
        mroce_dp_wait(f->s[0].dp, 20000);
}

static struct mroce_wc wait_wc(struct fix *f, int side, uint64_t id)
{
    struct side *s = &f->s[side];
    uint64_t end = mroce_dp_now_ns() + 20000 * MS;
    for (;;) {
        for (int i = 0; i < s->n_wc; i++)
            if (s->wc[i].wr_id == id) {
                struct mroce_wc wc = s->wc[i];
                s->wc[i] = s->wc[--s->n_wc];
                assert_int_equal(wc.status, MROCE_WC_SUCCESS);
                return wc;
            }
        if (mroce_dp_now_ns() > end)
            fail_msg("no completion for wr %llu on side %d",
                     (unsigned long long)id, side);
        pump(f);
    }
}

enum op { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ, N_OP };

/* op from side 0 over [off, +len) to side 1 at the same offset (READ:
 * side 1's bytes into side 0), waited for and compared. */
static void run_op(struct fix *f, int op, uint64_t id, size_t off, uint32_t len)
{
    struct side *a = &f->s[0], *b = &f->s[1];
    int src = op == OP_READ ? 1 : 0;
    pattern(f->s[src].mem + off, len, (uint32_t)id);
    memset(f->s[1 - src].mem + off, 0x5A, len);
    struct mroce_send_wr w = {
        .wr_id = id,
        .sge = {(uint64_t)(uintptr_t)(a->mem + off), len, mroce_mr_lkey(a->mr)},
        .remote_addr = (uint64_t)(uintptr_t)(b->mem + off),
        .rkey = mroce_mr_rkey(b->mr),
        .imm = (uint32_t)id ^ 0xC0FFEEu};
    bool recv = op == OP_WRITE_IMM || op == OP_SEND || op == OP_SEND_IMM;
    if (recv) {
        struct mroce_recv_wr r = {.wr_id = id,
                                  .sge = {(uint64_t)(uintptr_t)(b->mem + off),
                                          len, mroce_mr_lkey(b->mr)}};
        assert_int_equal(mroce_post_recv(b->conn, &r), 0);
    }
    int rc = op == OP_WRITE       ? mroce_post_write(a->conn, &w)
             : op == OP_WRITE_IMM ? mroce_post_write_imm(a->conn, &w)
             : op == OP_SEND      ? mroce_post_send(a->conn, &w)
             : op == OP_SEND_IMM  ? mroce_post_send_imm(a->conn, &w)
                                  : mroce_post_read(a->conn, &w);
    assert_int_equal(rc, 0);
    wait_wc(f, 0, id);
    if (recv) {
        struct mroce_wc wc = wait_wc(f, 1, id);
        if (op != OP_SEND)
            assert_int_equal(wc.imm, (uint32_t)id ^ 0xC0FFEEu);
    }
    assert_memory_equal(a->mem + off, b->mem + off, len);
}

static struct mroce_conn_counters cnt(const struct side *s)
{
    struct mroce_conn_counters c;
    mroce_conn_get_counters(s->conn, &c);
    return c;
}

static void every_op(const char *ip, int mode, const struct mroce_impair *imp)
{
    struct fix *f = fix_new(ip, mode, imp);
    if (!f) {
        print_message("%s not available here: skipped\n", ip);
        return;
    }
    static const uint32_t lens[] = {0, 100, 4096, 65536 + 17, 1 * MIB};
    uint64_t id = 1;
    for (int op = 0; op < N_OP; op++)
        for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
            run_op(f, op, id++, (size_t)op * 64, lens[k]);
    for (int i = 0; i < 2; i++) {
        struct mroce_conn_counters c = cnt(&f->s[i]);
        assert_int_equal(mroce_conn_sec_mode(f->s[i].conn), mode);
        assert_int_equal(c.drop_bad_tag + c.drop_sec_mode, 0);
        if (imp->duplicate == 0)
            assert_int_equal(c.drop_replay, 0);
    }
    struct mroce_conn_counters c1 = cnt(&f->s[1]);
    print_message("%s mode %d: %llu packets in, %llu replays refused\n", ip,
                  mode, (unsigned long long)c1.rx_pkts,
                  (unsigned long long)c1.drop_replay);
    if (imp->duplicate > 0)
        assert_true(c1.drop_replay + cnt(&f->s[0]).drop_replay > 0);
    fix_free(f);
    g_fix = NULL;
}

static const struct mroce_impair clean;

static void test_ops_v4(void **state)
{
    (void)state;
    every_op("127.0.0.1", MROCE_SEC_AUTH, &clean);
    every_op("127.0.0.1", MROCE_SEC_ENCRYPT, &clean);
}

static void test_ops_v6(void **state)
{
    (void)state;
    every_op("::1", MROCE_SEC_AUTH, &clean);
    every_op("::1", MROCE_SEC_ENCRYPT, &clean);
}

static void test_ops_impaired(void **state)
{
    (void)state;
    struct mroce_impair imp = {.loss = 0.03, .duplicate = 0.02, .seed = 5};
    every_op("127.0.0.1", MROCE_SEC_AUTH, &imp);
    every_op("127.0.0.1", MROCE_SEC_ENCRYPT, &imp);
}

/* ---- forgeries from a plain socket ---- */

static void send_to(uint16_t port, const uint8_t *buf, size_t len)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(
        sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa)),
        (ssize_t)len);
    close(fd);
}

/* A WRITE into side 1's memory with its connection id and key: plain
 * with a good ICRC, then sealed with a made-up tag; then a genuine
 * transfer. Both forgeries are dropped and counted, memory untouched. */
static void forge(int mode)
{
    struct fix *f = fix_new("127.0.0.1", mode, &clean);
    struct side *b = &f->s[1];
    struct mroce_conn_params pb;
    mroce_conn_get_params(b->conn, &pb);
    memset(b->mem, 0x33, 4096);
    uint8_t data[512], buf[1024];
    memset(data, 0xEE, sizeof(data));
    struct mroce_hdr h = {.opcode = MROCE_OP_WRITE,
                          .conn = pb.conn_id,
                          .va = (uint64_t)(uintptr_t)b->mem,
                          .rkey = mroce_mr_rkey(b->mr),
                          .msg_len = sizeof(data)};
    int n = mroce_wire_encode(&h, data, sizeof(data), buf, sizeof(buf));
    assert_true(n > 0);
    send_to(b->port, buf, (size_t)n);
    mroce_aead_frame(buf, false, 0, mode == MROCE_SEC_ENCRYPT);
    memset(buf + n - 4, 0xAB, 16); /* a tag instead of the ICRC */
    send_to(b->port, buf, (size_t)n + 12);
    uint64_t end = mroce_dp_now_ns() + 5000 * MS;
    while (cnt(b).drop_sec_mode + cnt(b).drop_bad_tag < 2 &&
           mroce_dp_now_ns() < end)
        pump(f);
    assert_int_equal(cnt(b).drop_sec_mode, 1);
    assert_int_equal(cnt(b).drop_bad_tag, 1);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(b->mem[i], 0x33);
    run_op(f, OP_WRITE, 1, 0, 64 * 1024);
    fix_free(f);
    g_fix = NULL;
}

static void test_forgeries(void **state)
{
    (void)state;
    forge(MROCE_SEC_AUTH);
    forge(MROCE_SEC_ENCRYPT);
}

int main(void)
{
    srand((unsigned)getpid());
    alarm(300);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_ops_v4, teardown),
        cmocka_unit_test_teardown(test_ops_v6, teardown),
        cmocka_unit_test_teardown(test_ops_impaired, teardown),
        cmocka_unit_test_teardown(test_forgeries, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
