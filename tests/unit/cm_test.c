/* Connection manager: the message codec (round trip, truncated, bad magic
 * and version, oversized, lengths that disagree), a hostile TCP peer
 * against mroce_cm_establish, a two-process transfer over the UDP
 * datapath set up through the CM with the data verified, and a killed
 * peer (kill -9) whose survivor's work requests complete with an error
 * within a bound. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mroce/mroce_cm.h>
#include <mroce/mroce_dp.h>

#include "cm/msg.h"
#include "wire/be.h"

/* ---- Codec ---- */

static struct mroce_conn_params *params_sample(void)
{
    static struct mroce_conn_params p;
    memset(&p, 0, sizeof(p));
    p.conn_id = 0x01020304;
    p.addr.family = MROCE_AF_INET6;
    for (int i = 0; i < 16; i++)
        p.addr.ip[i] = (uint8_t)(0xf0 + i);
    p.udp_port = 4797;
    p.n_paths = 16;
    p.n_streams = 3;
    p.mtu = 4096;
    p.dsn_window = 4096;
    p.msg_window = 64;
    p.max_rd = 16;
    p.transport = MROCE_TRANSPORT_ROCEV2;
    p.n_qps = 3;
    for (int i = 0; i < 3; i++) {
        p.qpn[i] = 0x100u + (uint32_t)i;
        p.psn[i] = 0xabc00u + (uint32_t)i;
    }
    return &p;
}

static void test_hello_roundtrip(void **state)
{
    (void)state;
    uint8_t buf[CM_MSG_MAX];
    const char blob[] = "addr rkey len";
    struct mroce_conn_params *p = params_sample();
    int n = cm_encode_hello(p, blob, sizeof(blob), buf, sizeof(buf));
    assert_int_equal(n, CM_HDR_LEN + CM_HELLO_FIXED + 24 + sizeof(blob));
    assert_int_equal(mroce_be32_get(buf), CM_MAGIC); /* "MRCM" */
    struct cm_hdr h;
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, NULL), 0);
    assert_int_equal(h.type, CM_HELLO);
    struct mroce_conn_params q;
    const uint8_t *b;
    size_t bl;
    assert_int_equal(
        cm_decode_hello(buf + CM_HDR_LEN, h.len, &q, &b, &bl, NULL), 0);
    assert_memory_equal(p, &q, sizeof(q));
    assert_int_equal(bl, sizeof(blob));
    assert_memory_equal(b, blob, bl);
}

static void test_hdr_errors(void **state)
{
    (void)state;
    uint8_t buf[CM_MSG_MAX];
    struct cm_hdr h;
    const char *why = NULL;
    int n = cm_encode_simple(CM_READY, NULL, 0, buf, sizeof(buf));
    assert_int_equal(n, CM_HDR_LEN);
    for (int k = 0; k < CM_HDR_LEN; k++) /* truncated: not yet */
        assert_int_equal(cm_hdr_decode(buf, (size_t)k, &h, NULL), MROCE_EAGAIN);
    buf[4] = 7; /* bad version */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why), MROCE_EPROTO);
    assert_non_null(strstr(why, "version"));
    buf[4] = MROCE_CM_VERSION;
    buf[0] = 'X'; /* bad magic */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why), MROCE_EPROTO);
    buf[0] = 'M';
    buf[5] = 99; /* unknown type */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why), MROCE_EPROTO);
    buf[5] = CM_APP;
    mroce_be32_put(buf + 8, MROCE_CM_MAX_BODY + 1); /* oversized */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why), MROCE_EPROTO);
    assert_non_null(strstr(why, "oversized"));
    buf[5] = CM_READY;
    mroce_be32_put(buf + 8, 4); /* READY carries no body */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why), MROCE_EPROTO);
}

static void test_hello_errors(void **state)
{
    (void)state;
    uint8_t buf[CM_MSG_MAX];
    struct mroce_conn_params *p = params_sample(), q;
    const uint8_t *b;
    size_t bl;
    const char *why;
    int n = cm_encode_hello(p, "xy", 2, buf, sizeof(buf));
    uint8_t *body = buf + CM_HDR_LEN;
    size_t len = (size_t)n - CM_HDR_LEN;
    for (size_t k = 0; k < len; k++) /* every truncation is refused */
        assert_int_equal(cm_decode_hello(body, k, &q, &b, &bl, &why),
                         MROCE_EPROTO);
    body[5] = 5; /* address family */
    assert_int_equal(cm_decode_hello(body, len, &q, &b, &bl, &why),
                     MROCE_EPROTO);
    body[5] = MROCE_AF_INET6;
    mroce_be16_put(body + 44, MROCE_MAX_QPS + 1);
    assert_int_equal(cm_decode_hello(body, len, &q, &b, &bl, &why),
                     MROCE_EPROTO);
    mroce_be16_put(body + 44, 3);
    mroce_be16_put(body + 46, MROCE_CM_MAX_BLOB + 1);
    assert_int_equal(cm_decode_hello(body, len, &q, &b, &bl, &why),
                     MROCE_EPROTO);
    /* Encoders refuse what decoders would. */
    assert_int_equal(
        cm_encode_hello(p, buf, MROCE_CM_MAX_BLOB + 1, buf, sizeof(buf)),
        MROCE_EINVAL);
    assert_int_equal(cm_encode_hello(p, NULL, 0, buf, 20), MROCE_ENOBUFS);
    assert_int_equal(
        cm_encode_simple(CM_APP, buf, MROCE_CM_MAX_APP + 1, buf, sizeof(buf)),
        MROCE_EINVAL);
}

static void test_reject_text(void **state)
{
    (void)state;
    uint8_t buf[600];
    char big[400];
    memset(big, 'a', sizeof(big));
    big[sizeof(big) - 1] = 0;
    big[0] = '\n';
    int n = cm_encode_reject(MROCE_EINVAL, big, buf, sizeof(buf));
    struct cm_hdr h;
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, NULL), 0);
    int32_t code;
    char text[32];
    assert_int_equal(
        cm_decode_reject(buf + CM_HDR_LEN, h.len, &code, text, sizeof(text)),
        0);
    assert_int_equal(code, MROCE_EINVAL);
    assert_int_equal(strlen(text), sizeof(text) - 1);
    assert_int_equal(text[0], '?'); /* control characters masked */
}

/* ---- A hostile TCP peer against establish ---- */

/* UDP ports of this test run (the datapath's default 4797 may be taken
 * by a parallel test). */
static uint16_t udp_port(int k)
{
    return (uint16_t)(30000 + (getpid() % 5000) * 4 + k);
}

struct hostile {
    struct mroce_cm_listener *l;
    struct mroce_cm *cm;
    struct mroce_dp *dp;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    int raw;
};

static struct mroce_dp *dp_open(const char *ip, uint16_t port, uint64_t seed)
{
    struct mroce_dp_attr a = {.kind = MROCE_DP_UDP,
                              .local_ip = ip,
                              .port = port,
                              .n_src_ports = 4,
                              .ctx = {.seed = seed}};
    struct mroce_dp *dp = NULL;
    return mroce_dp_create(&a, &dp) ? NULL : dp; /* no assert: children */
}

static struct mroce_conn *conn_open(struct mroce_dp *dp, struct mroce_cq **cq,
                                    struct mroce_pd **pdo)
{
    struct mroce_ctx *ctx = mroce_dp_ctx(dp);
    struct mroce_pd *pd;
    if (mroce_pd_alloc(ctx, &pd) || mroce_cq_create(ctx, 1024, cq))
        return NULL;
    struct mroce_conn_attr ca = {.send_cq = *cq,
                                 .recv_cq = *cq,
                                 .n_paths = 4,
                                 .min_rto_ns = 1000000,
                                 .max_rto_ns = 50000000,
                                 .retry_cnt = 3};
    struct mroce_conn *c;
    if (mroce_conn_create(pd, &ca, &c))
        return NULL;
    if (pdo)
        *pdo = pd;
    return c;
}

static int raw_dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void hostile_open(struct hostile *h)
{
    memset(h, 0, sizeof(*h));
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, &h->l), 0);
    h->raw = raw_dial(mroce_cm_listener_port(h->l));
    assert_int_equal(mroce_cm_accept(h->l, 2000, &h->cm), 0);
    h->dp = dp_open("127.0.0.1", udp_port(2), 3);
    assert_non_null(h->dp);
    h->conn = conn_open(h->dp, &h->cq, NULL);
    assert_non_null(h->conn);
}

static void hostile_close(struct hostile *h)
{
    close(h->raw);
    mroce_cm_close(h->cm);
    mroce_cm_listener_close(h->l);
    mroce_dp_destroy(h->dp);
}

/* Sends raw bytes (then optionally closes) and expects establish to fail
 * with err, the connection still INIT. */
static void hostile_case(const uint8_t *bytes, size_t n, int close_after,
                         int err, const char *needle)
{
    struct hostile h;
    hostile_open(&h);
    assert_int_equal(send(h.raw, bytes, n, 0), (ssize_t)n);
    if (close_after)
        shutdown(h.raw, SHUT_WR);
    int rc = mroce_cm_establish(h.cm, h.conn, NULL, 0, NULL, 0, NULL, 2000);
    assert_int_equal(rc, err);
    assert_non_null(strstr(mroce_cm_errmsg(), needle));
    assert_int_equal(mroce_conn_state(h.conn), MROCE_CONN_INIT);
    hostile_close(&h);
}

static void test_establish_hostile(void **state)
{
    (void)state;
    uint8_t buf[CM_MSG_MAX];
    hostile_case((const uint8_t *)"GET / HTTP/1.0\r\n\r\n", 18, 0, MROCE_EPROTO,
                 "magic");
    int n = cm_encode_simple(CM_READY, NULL, 0, buf, sizeof(buf));
    buf[4] = 2; /* a future version */
    hostile_case(buf, (size_t)n, 0, MROCE_EPROTO, "version");
    buf[4] = MROCE_CM_VERSION;
    buf[5] = CM_APP;
    mroce_be32_put(buf + 8, 1u << 30);
    hostile_case(buf, (size_t)n, 0, MROCE_EPROTO, "oversized");
    n = cm_encode_hello(params_sample(), "ab", 2, buf, sizeof(buf));
    hostile_case(buf, (size_t)n - 5, 1, MROCE_EPROTO, "truncated");
    hostile_case(buf, 0, 1, MROCE_ESTATE, "closed");
    n = cm_encode_simple(CM_READY, NULL, 0, buf, sizeof(buf));
    hostile_case(buf, (size_t)n, 0, MROCE_EPROTO, "expected HELLO");
    /* Values out of range: the codec passes them, connect refuses. */
    struct mroce_conn_params *p = params_sample();
    p->transport = MROCE_TRANSPORT_METAROCE;
    p->n_qps = 0;
    p->mtu = 100;
    n = cm_encode_hello(p, NULL, 0, buf, sizeof(buf));
    struct hostile h;
    hostile_open(&h);
    send(h.raw, buf, (size_t)n, 0);
    assert_int_equal(
        mroce_cm_establish(h.cm, h.conn, NULL, 0, NULL, 0, NULL, 2000),
        MROCE_EINVAL);
    hostile_close(&h);
}

static void test_timeouts(void **state)
{
    (void)state;
    struct mroce_cm_listener *l;
    struct mroce_cm *cm;
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, &l), 0);
    assert_int_equal(mroce_cm_accept(l, 50, &cm), MROCE_EAGAIN);
    uint16_t port = mroce_cm_listener_port(l);
    mroce_cm_listener_close(l);
    /* Nobody listens now: dial retries until its deadline, then fails. */
    assert_true(mroce_cm_dial("127.0.0.1", port, 100, &cm) < 0);
    assert_null(cm);
    assert_int_equal(mroce_cm_dial("no.such.host.invalid", 1, 100, &cm),
                     MROCE_EINVAL);
}

/* ---- Two processes over the UDP datapath ---- */

#define XFER (1u << 20)

static uint16_t child_port; /* set before fork */

static uint8_t pat(size_t i)
{
    return (uint8_t)(i * 7 + (i >> 9));
}

struct end {
    struct mroce_cm *cm;
    struct mroce_dp *dp;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *buf;
    uint8_t peer[12]; /* remote buffer: addr (8), rkey (4) */
};

static int end_open(struct end *e, uint16_t udp_port)
{
    char ip[MROCE_CM_ADDRSTRLEN];
    if (mroce_cm_local_ip(e->cm, ip, sizeof(ip)))
        return -1;
    e->dp = dp_open(ip, udp_port, udp_port);
    struct mroce_pd *pd;
    e->conn = e->dp ? conn_open(e->dp, &e->cq, &pd) : NULL;
    e->buf = calloc(1, XFER);
    if (!e->conn || !e->buf)
        return -1;
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    if (mroce_reg_mr(pd, e->buf, XFER, acc, &e->mr))
        return -1;
    uint8_t mine[12];
    mroce_be64_put(mine, (uint64_t)(uintptr_t)e->buf);
    mroce_be32_put(mine + 8, mroce_mr_rkey(e->mr));
    size_t got = 0;
    int rc = mroce_cm_establish(e->cm, e->conn, mine, sizeof(mine), e->peer,
                                sizeof(e->peer), &got, 5000);
    return rc || got != sizeof(e->peer) ? -1 : 0;
}

static void end_close(struct end *e)
{
    mroce_cm_close(e->cm);
    if (e->dp)
        mroce_dp_destroy(e->dp);
    free(e->buf);
}

/* Drives the datapath until a completion arrives or ms pass. */
static int end_wait_wc(struct end *e, struct mroce_wc *wc, int ms)
{
    uint64_t dl = mroce_dp_now_ns() + (uint64_t)ms * 1000000;
    while (mroce_dp_now_ns() < dl) {
        mroce_progress(e->dp);
        if (mroce_poll_cq(e->cq, 1, wc) == 1)
            return 0;
        mroce_cm_poll(e->cm, e->conn);
    }
    return -1;
}

/* Child: writes its pattern into the parent's buffer with one WRITE_IMM,
 * then waits for the parent's "ok" and closes. */
static int child_writer(uint16_t port)
{
    struct end e = {0};
    if (mroce_cm_dial("127.0.0.1", port, 5000, &e.cm) ||
        end_open(&e, child_port))
        return 10;
    for (size_t i = 0; i < XFER; i++)
        e.buf[i] = pat(i);
    struct mroce_send_wr wr = {
        .wr_id = 1,
        .sge = {(uint64_t)(uintptr_t)e.buf, XFER, mroce_mr_lkey(e.mr)},
        .remote_addr = mroce_be64_get(e.peer),
        .rkey = mroce_be32_get(e.peer + 8),
        .imm = 77};
    struct mroce_wc wc;
    if (mroce_post_write_imm(e.conn, &wr) || end_wait_wc(&e, &wc, 20000) ||
        wc.status != MROCE_WC_SUCCESS)
        return 11;
    char ok[4];
    uint64_t dl = mroce_dp_now_ns() + 20000000000ull;
    int n = MROCE_EAGAIN;
    while (n == MROCE_EAGAIN && mroce_dp_now_ns() < dl) {
        mroce_progress(e.dp); /* keep ACKing */
        n = mroce_cm_recv(e.cm, ok, sizeof(ok), 0);
    }
    end_close(&e);
    return n == 2 && !memcmp(ok, "ok", 2) ? 0 : 12;
}

static pid_t spawn(int (*fn)(uint16_t), uint16_t port)
{
    child_port = udp_port(1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60); /* bounded even if the parent dies */
        _exit(fn(port));
    }
    return pid;
}

static int reap(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void test_two_process_write(void **state)
{
    (void)state;
    struct mroce_cm_listener *l;
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, &l), 0);
    pid_t pid = spawn(child_writer, mroce_cm_listener_port(l));
    struct end e = {0};
    assert_int_equal(mroce_cm_accept(l, 10000, &e.cm), 0);
    mroce_cm_listener_close(l);
    assert_int_equal(end_open(&e, udp_port(0)), 0);
    struct mroce_recv_wr rwr = {.wr_id = 9};
    assert_int_equal(mroce_post_recv(e.conn, &rwr), 0);
    struct mroce_wc wc;
    assert_int_equal(end_wait_wc(&e, &wc, 20000), 0);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
    assert_int_equal(wc.opcode, MROCE_WC_RECV_RDMA_WITH_IMM);
    assert_int_equal(wc.imm, 77);
    for (size_t i = 0; i < XFER; i++)
        if (e.buf[i] != pat(i))
            fail_msg("byte %zu differs", i);
    assert_int_equal(mroce_cm_send(e.cm, "ok", 2), 0);
    /* The child closes with BYE: poll reports it and disconnects. */
    uint64_t dl = mroce_dp_now_ns() + 20000000000ull;
    int rc = 0;
    while (!rc && mroce_dp_now_ns() < dl) {
        mroce_progress(e.dp);
        rc = mroce_cm_poll(e.cm, e.conn);
    }
    assert_int_equal(rc, 1);
    assert_int_not_equal(mroce_conn_state(e.conn), MROCE_CONN_CONNECTED);
    assert_int_equal(reap(pid), 0);
    end_close(&e);
}

/* Child for the kill test: sets up, then idles until killed. */
static int child_idle(uint16_t port)
{
    struct end e = {0};
    if (mroce_cm_dial("127.0.0.1", port, 5000, &e.cm) ||
        end_open(&e, child_port))
        return 10;
    for (;;)
        mroce_progress(e.dp);
}

/* kill -9 of the peer: the survivor's posted work (a receive and writes
 * into the dead peer) completes with an error, found by the CM socket
 * closing (or by the engine's retry limit), well within 5 s. */
static void test_killed_peer(void **state)
{
    (void)state;
    struct mroce_cm_listener *l;
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, &l), 0);
    pid_t pid = spawn(child_idle, mroce_cm_listener_port(l));
    struct end e = {0};
    assert_int_equal(mroce_cm_accept(l, 10000, &e.cm), 0);
    mroce_cm_listener_close(l);
    assert_int_equal(end_open(&e, udp_port(0)), 0);
    struct mroce_recv_wr rwr = {.wr_id = 5};
    assert_int_equal(mroce_post_recv(e.conn, &rwr), 0);
    kill(pid, SIGKILL);
    reap(pid);
    uint64_t t0 = mroce_dp_now_ns();
    struct mroce_send_wr wr = {
        .wr_id = 6,
        .sge = {(uint64_t)(uintptr_t)e.buf, 65536, mroce_mr_lkey(e.mr)},
        .remote_addr = mroce_be64_get(e.peer),
        .rkey = mroce_be32_get(e.peer + 8)};
    int posted = mroce_post_write(e.conn, &wr) == 0;
    struct mroce_wc wc;
    int errors = 0;
    while (end_wait_wc(&e, &wc, 5000) == 0) {
        assert_int_not_equal(wc.status, MROCE_WC_SUCCESS);
        errors++;
    }
    assert_int_equal(errors, 1 + posted);
    assert_true(mroce_dp_now_ns() - t0 < 10000000000ull);
    end_close(&e);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_roundtrip),
        cmocka_unit_test(test_hdr_errors),
        cmocka_unit_test(test_hello_errors),
        cmocka_unit_test(test_reject_text),
        cmocka_unit_test(test_establish_hostile),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_two_process_write),
        cmocka_unit_test(test_killed_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
