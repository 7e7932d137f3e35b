/* Connection manager over real TCP sockets on 127.0.0.1: the set-up
 * exchange with and without a key (agreed secret, tagged messages, wrong
 * or missing key, a forged or replayed message), the address check, the
 * listener against hostile connectors (garbage, oversized headers, 6
 * bytes then silence, idle, connect-and-close, a version 1 HELLO, a READY
 * first, too many at once) while the real client still gets through,
 * nothing sent before a HELLO checks out, keepalives and a silent peer,
 * and a two-process transfer over the UDP datapath plus a killed peer.
 * The client side of each exchange runs in a thread (cmocka asserts stay
 * in the main thread). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce_cm.h>
#include <mroce/mroce_crypto.h>
#include <mroce/mroce_dp.h>

#include "cm/chan.h"
#include "cm/check.h"
#include "cm/msg.h"
#include "cm/sock.h"
#include "wire/ackm.h"
#include "wire/be.h"

static const uint8_t key1[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t key2[32] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
                                 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
                                 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

static int raw_dial(uint16_t port);
static size_t raw_drain(int fd, uint8_t *buf, size_t cap, int ms);
static int raw_send(int fd, const void *b, size_t n);

/* ---- An endpoint without a datapath: establish needs none ---- */

struct side {
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    uint8_t ackm_off; /* its connection's attribute (R-VER-5) */
};

/* last_octet >= 100: a context with the crypto provider (R-AEAD). */
static int side_open(struct side *s, uint8_t last_octet)
{
    struct mroce_ctx_attr a = {.seed = 7 + last_octet};
    if (last_octet >= 100) {
        a.crypto = mroce_crypto_default();
        last_octet -= 100;
    }
    a.addr = (struct mroce_addr){MROCE_AF_INET, {127, 0, 0, last_octet}};
    if (mroce_ctx_open(&a, &s->ctx) || mroce_pd_alloc(s->ctx, &s->pd) ||
        mroce_cq_create(s->ctx, 256, &s->cq))
        return -1;
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_paths = 4,
                                 .min_rto_ns = 1000000,
                                 .ackm_off = s->ackm_off};
    return mroce_conn_create(s->pd, &ca, &s->conn);
}

static void side_close(struct side *s)
{
    mroce_ctx_close(s->ctx);
}

/* ---- The client, in a thread ---- */

struct cli {
    uint16_t port;
    struct mroce_cm_attr attr;
    uint8_t octet; /* data address 127.0.0.octet */
    int rc, reason;
    char err[256];
    struct mroce_cm *cm;
    struct side s;
    char blob[16];
    size_t got;
    volatile int polling; /* keep calling mroce_cm_poll until cleared */
    int poll_rc;
    pthread_t th;
};

static void *cli_main(void *arg)
{
    struct cli *c = arg;
    c->rc = side_open(&c->s, c->octet ? c->octet : 1);
    if (!c->rc)
        c->rc = mroce_cm_dial("127.0.0.1", c->port, 5000, &c->attr, &c->cm);
    if (!c->rc)
        c->rc = mroce_cm_establish(c->cm, c->s.conn, "client", 6, c->blob,
                                   sizeof(c->blob), &c->got, 5000);
    c->reason = mroce_cm_reject_reason();
    snprintf(c->err, sizeof(c->err), "%s", mroce_cm_errmsg());
    while (!c->rc && c->polling && !c->poll_rc) {
        c->poll_rc = mroce_cm_poll(c->cm, c->s.conn);
        usleep(10000);
    }
    return NULL;
}

static void cli_start(struct cli *c, uint16_t port)
{
    c->port = port;
    assert_int_equal(pthread_create(&c->th, NULL, cli_main, c), 0);
}

static void cli_join(struct cli *c)
{
    c->polling = 0;
    pthread_join(c->th, NULL);
}

static void cli_free(struct cli *c)
{
    mroce_cm_close(c->cm);
    side_close(&c->s);
}

/* A server: listener, accept, establish. */
struct srv {
    struct mroce_cm_listener *l;
    struct mroce_cm *cm;
    struct side s;
    char blob[16];
    size_t got;
};

static uint16_t srv_listen_opt(struct srv *v, const struct mroce_cm_attr *a,
                               uint8_t ackm_off)
{
    memset(v, 0, sizeof(*v));
    v->s.ackm_off = ackm_off;
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, a, &v->l), 0);
    assert_int_equal(side_open(&v->s, 1), 0);
    return mroce_cm_listener_port(v->l);
}

static uint16_t srv_listen(struct srv *v, const struct mroce_cm_attr *a)
{
    return srv_listen_opt(v, a, 0);
}

static int srv_establish(struct srv *v, int timeout_ms)
{
    int err = mroce_cm_accept(v->l, timeout_ms, &v->cm);
    if (!err)
        err = mroce_cm_establish(v->cm, v->s.conn, "server", 6, v->blob,
                                 sizeof(v->blob), &v->got, 5000);
    return err;
}

static void srv_free(struct srv *v)
{
    mroce_cm_close(v->cm);
    mroce_cm_listener_close(v->l);
    side_close(&v->s);
}

/* ---- The exchange ---- */

static void test_establish_plain(void **state)
{
    (void)state;
    struct srv v;
    struct cli c = {0};
    cli_start(&c, srv_listen(&v, NULL));
    assert_int_equal(srv_establish(&v, 5000), 0);
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    assert_int_equal(v.got, 6);
    assert_memory_equal(v.blob, "client", 6);
    assert_int_equal(c.got, 6);
    assert_memory_equal(c.blob, "server", 6);
    assert_int_equal(mroce_conn_state(v.s.conn), MROCE_CONN_CONNECTED);
    assert_int_equal(mroce_conn_state(c.s.conn), MROCE_CONN_CONNECTED);
    uint8_t mode = 0;
    assert_int_equal(mroce_cm_security(v.cm, &mode, NULL), 0);
    assert_int_equal(mode, MROCE_CM_MODE_NONE);
    char buf[32];
    assert_int_equal(mroce_cm_send(c.cm, "ping", 4), 0);
    assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 2000), 4);
    assert_memory_equal(buf, "ping", 4);
    assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 0), MROCE_EAGAIN);
    mroce_cm_close(c.cm); /* BYE: the server sees the peer leave */
    c.cm = NULL;
    int rc = 0;
    for (int i = 0; i < 200 && !rc; i++, usleep(5000))
        rc = mroce_cm_poll(v.cm, v.s.conn);
    assert_int_equal(rc, 1);
    assert_int_not_equal(mroce_conn_state(v.s.conn), MROCE_CONN_CONNECTED);
    cli_free(&c);
    srv_free(&v);
}

static void test_establish_psk(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.psk = key1, .psk_len = sizeof(key1)};
    struct srv v;
    struct cli c = {.attr = a};
    cli_start(&c, srv_listen(&v, &a)); /* no crypto provider: mode NONE */
    assert_int_equal(srv_establish(&v, 5000), 0);
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    uint8_t s1[MROCE_CM_SECRET_LEN], s2[MROCE_CM_SECRET_LEN], zero[32] = {0};
    uint8_t m1, m2;
    assert_int_equal(mroce_cm_security(v.cm, &m1, s1), 1);
    assert_int_equal(mroce_cm_security(c.cm, &m2, s2), 1);
    assert_memory_equal(s1, s2, sizeof(s1));
    /* without a crypto provider the key authenticates the exchange only
     * (test_modes_keyed: with providers, ENC keys both connections) */
    assert_int_equal(m1, MROCE_CM_MODE_NONE);
    assert_int_equal(mroce_conn_sec_mode(v.s.conn), MROCE_SEC_NONE);
    assert_memory_not_equal(s1, zero, sizeof(s1));
    assert_int_equal(m1, m2);
    /* Tagged messages both ways, a KEEPALIVE in between. */
    char buf[32];
    assert_int_equal(mroce_cm_send(v.cm, "abc", 3), 0);
    assert_int_equal(mroce_cm_recv(c.cm, buf, sizeof(buf), 2000), 3);
    c.cm->last_tx_ms -= 10000; /* make a KEEPALIVE due */
    assert_int_equal(mroce_cm_poll(c.cm, c.s.conn), 0);
    assert_int_equal(mroce_cm_send(c.cm, "defg", 4), 0);
    assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 2000), 4);
    assert_memory_equal(buf, "defg", 4);
    struct mroce_cm_counters k;
    mroce_cm_get_counters(v.cm, &k);
    assert_int_equal(k.rx_keepalive, 1);
    assert_int_equal(k.rx_bad_mac, 0);
    /* A second exchange with the same key derives another secret. */
    cli_free(&c);
    mroce_cm_close(v.cm);
    side_close(&v.s);
    assert_int_equal(side_open(&v.s, 1), 0);
    struct cli c2 = {.attr = a};
    cli_start(&c2, mroce_cm_listener_port(v.l));
    assert_int_equal(srv_establish(&v, 5000), 0);
    cli_join(&c2);
    assert_int_equal(mroce_cm_security(v.cm, NULL, s2), 1);
    assert_memory_not_equal(s1, s2, sizeof(s1));
    cli_free(&c2);
    srv_free(&v);
}

/* A client whose set-up the server refuses at accept: the client's error
 * and reason; the server's accept gives up, having handed out nothing. */
static void expect_refused(const struct mroce_cm_attr *sa,
                           const struct mroce_cm_attr *ca, uint8_t octet,
                           int err, int reason)
{
    struct srv v;
    struct cli c = {.octet = octet};
    if (ca)
        c.attr = *ca;
    cli_start(&c, srv_listen(&v, sa));
    assert_int_equal(srv_establish(&v, 1500), MROCE_EAGAIN);
    cli_join(&c);
    if (c.rc != err || c.reason != reason)
        fail_msg("wanted %s/%s, got %s/%s (%s)", mroce_strerror(err),
                 mroce_cm_reject_str(reason), mroce_strerror(c.rc),
                 mroce_cm_reject_str(c.reason), c.err);
    assert_int_equal(mroce_conn_state(c.s.conn), MROCE_CONN_INIT);
    struct mroce_cm_listener_counters k;
    mroce_cm_listener_get_counters(v.l, &k);
    assert_int_equal(k.rejected, 1);
    assert_int_equal(k.handed, 0);
    cli_free(&c);
    srv_free(&v);
}

static void test_refusals(void **state)
{
    (void)state;
    struct mroce_cm_attr k1 = {.psk = key1, .psk_len = 32};
    struct mroce_cm_attr k2 = {.psk = key2, .psk_len = 32};
    expect_refused(&k1, &k2, 1, MROCE_EACCES, MROCE_CM_REJ_AUTH);
    expect_refused(&k1, NULL, 1, MROCE_EPROTO, MROCE_CM_REJ_FEATURE);
    expect_refused(NULL, &k1, 1, MROCE_EPROTO, MROCE_CM_REJ_FEATURE);
    /* A data address other than the TCP connection's (127.0.0.1). */
    expect_refused(NULL, NULL, 9, MROCE_EPROTO, MROCE_CM_REJ_ADDRESS);
    /* A server accepting encryption only: a client without a key is
     * refused at once. */
    struct mroce_cm_attr enc = {.modes = MROCE_CM_MODE_ENC};
    expect_refused(&enc, NULL, 1, MROCE_EPROTO, MROCE_CM_REJ_SECURITY);
    struct srv v;
    /* A client accepting encryption only fails before it sends. */
    struct side s;
    assert_int_equal(side_open(&s, 1), 0);
    uint16_t port = srv_listen(&v, NULL);
    struct mroce_cm *cm;
    assert_int_equal(mroce_cm_dial("127.0.0.1", port, 2000, &enc, &cm), 0);
    assert_int_equal(
        mroce_cm_establish(cm, s.conn, NULL, 0, NULL, 0, NULL, 2000),
        MROCE_EINVAL);
    mroce_cm_close(cm);
    side_close(&s);
    srv_free(&v);
    struct mroce_cm_attr small = {.max_blob = 5}; /* "client" is 6 */
    expect_refused(&small, NULL, 1, MROCE_EPROTO, MROCE_CM_REJ_LIMIT);
}

/* A peer whose engine can encrypt (played here by hand: this build's
 * cannot) offers only ENC, with the key. The listener, which does not know
 * the connection yet, lets it through; establish refuses it, before the
 * server says anything else, once it knows its engine cannot encrypt. */
static void test_mode_checked_at_establish(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.psk = key1, .psk_len = 32};
    struct srv v;
    uint16_t port = srv_listen(&v, &a);
    struct cm_psk k;
    assert_int_equal(cm_auth_psk(key1, 32, &k), 0);
    struct side s;
    assert_int_equal(side_open(&s, 1), 0);
    struct cm_hello h;
    memset(&h, 0, sizeof(h));
    mroce_conn_get_params(s.conn, &h.p);
    h.proto_min = h.proto_max = 1;
    h.modes = MROCE_CM_MODE_ENC;
    h.features = h.required = CM_FEAT_PSK;
    memcpy(h.psk_id, k.psk_id, CM_PSK_ID_LEN);
    static uint8_t msg[CM_MSG_MAX];
    int n = cm_encode_hello(&h, msg, sizeof(msg));
    assert_int_equal(cm_auth_hello_tag(&k, NULL, 0, msg, (size_t)n - CM_TAG_LEN,
                                       msg + n - CM_TAG_LEN),
                     0);
    int fd = raw_dial(port);
    assert_int_equal(raw_send(fd, msg, (size_t)n), 0);
    assert_int_equal(srv_establish(&v, 2000), MROCE_EPROTO);
    assert_int_equal(mroce_cm_reject_reason(), MROCE_CM_REJ_SECURITY);
    uint8_t buf[512];
    size_t got = raw_drain(fd, buf, sizeof(buf), 300);
    assert_true(got >= CM_HDR_LEN + CM_REJECT_FIXED);
    assert_int_equal(buf[5], CM_REJECT); /* and nothing before it */
    assert_int_equal(mroce_be16_get(buf + CM_HDR_LEN), MROCE_CM_REJ_SECURITY);
    close(fd);
    side_close(&s);
    srv_free(&v);
}

/* With a key and a crypto provider on both sides the strongest mode,
 * ENC, is agreed and keyed into both connections (R-CM-9, R-AEAD-6);
 * --auth on one side (AUTH only) gives AUTH; a side without a provider
 * gives NONE. */
static void expect_mode(const struct mroce_cm_attr *sa, uint8_t s_octet,
                        const struct mroce_cm_attr *ca, uint8_t c_octet,
                        int want_sec)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, sa, &v.l), 0);
    assert_int_equal(side_open(&v.s, s_octet), 0);
    struct cli c = {.attr = *ca, .octet = c_octet};
    cli_start(&c, mroce_cm_listener_port(v.l));
    assert_int_equal(srv_establish(&v, 5000), 0);
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    assert_int_equal(mroce_conn_sec_mode(v.s.conn), want_sec);
    assert_int_equal(mroce_conn_sec_mode(c.s.conn), want_sec);
    uint8_t m1, m2;
    assert_int_equal(mroce_cm_security(v.cm, &m1, NULL), 1);
    assert_int_equal(mroce_cm_security(c.cm, &m2, NULL), 1);
    assert_int_equal(m1, m2);
    cli_free(&c);
    srv_free(&v);
}

static void test_modes_keyed(void **state)
{
    (void)state;
    struct mroce_cm_attr k = {.psk = key1, .psk_len = 32};
    struct mroce_cm_attr auth = k;
    auth.modes = MROCE_CM_MODE_AUTH;
    expect_mode(&k, 101, &k, 101, MROCE_SEC_ENCRYPT);
    expect_mode(&k, 101, &auth, 101, MROCE_SEC_AUTH);
    expect_mode(&k, 101, &k, 1, MROCE_SEC_NONE);
}

static void test_address_allowed(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.n_allow = 1};
    assert_int_equal(mroce_cm_prefix_parse("127.0.0.0/29", &a.allow[0]), 0);
    struct srv v;
    struct cli c = {.octet = 7};
    cli_start(&c, srv_listen(&v, &a));
    assert_int_equal(srv_establish(&v, 5000), 0);
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    cli_free(&c);
    srv_free(&v);
}

static int refuse_blob(void *ud, const void *blob, size_t len)
{
    (void)ud;
    return len == 6 && !memcmp(blob, "client", 6);
}

/* The application's check runs before the server says anything. */
static void test_app_refuses(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.check_blob = refuse_blob};
    struct srv v;
    struct cli c = {0};
    cli_start(&c, srv_listen(&v, &a));
    assert_int_equal(srv_establish(&v, 5000), MROCE_EPROTO);
    assert_int_equal(mroce_cm_reject_reason(), MROCE_CM_REJ_APP);
    cli_join(&c);
    assert_int_equal(c.rc, MROCE_EPROTO);
    assert_int_equal(c.reason, MROCE_CM_REJ_APP);
    assert_int_equal(mroce_conn_state(v.s.conn), MROCE_CONN_INIT);
    cli_free(&c);
    srv_free(&v);
}

/* Messages after READY carry a tag over their sequence number: a forged
 * one and a replayed one are refused. */
static void test_forged_and_replayed(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.psk = key1, .psk_len = 32};
    for (int replay = 0; replay < 2; replay++) {
        struct srv v;
        struct cli c = {.attr = a};
        cli_start(&c, srv_listen(&v, &a));
        assert_int_equal(srv_establish(&v, 5000), 0);
        cli_join(&c);
        assert_int_equal(c.rc, 0);
        uint8_t m[CM_HDR_LEN + 4 + CM_MSG_TAG_LEN];
        cm_hdr_put(m, CM_APP, 4 + CM_MSG_TAG_LEN);
        memcpy(m + CM_HDR_LEN, "evil", 4);
        memset(m + CM_HDR_LEN + 4, 0, CM_MSG_TAG_LEN); /* a guessed tag */
        if (replay) { /* the right tag of seq 0, sent twice */
            cm_auth_msg_tag(&c.cm->ses, CM_CLIENT, 0, m, m + CM_HDR_LEN, 4,
                            m + CM_HDR_LEN + 4);
            assert_int_equal(send(mroce_cm_fd(c.cm), m, sizeof(m), 0),
                             (ssize_t)sizeof(m));
        }
        assert_int_equal(send(mroce_cm_fd(c.cm), m, sizeof(m), 0),
                         (ssize_t)sizeof(m));
        char buf[16];
        if (replay)
            assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 2000), 4);
        assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 2000),
                         MROCE_EACCES);
        struct mroce_cm_counters k;
        mroce_cm_get_counters(v.cm, &k);
        assert_int_equal(k.rx_bad_mac, 1);
        /* The stream is no longer the peer's: nothing more is taken. */
        assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 0),
                         MROCE_EPROTO);
        cli_free(&c);
        srv_free(&v);
    }
}

/* ---- Liveness (R-CM-12) ---- */

static int64_t now_ms(void)
{
    return cm_now_ms();
}

static void test_keepalive(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.keepalive_ms = 50};
    struct srv v;
    struct cli c = {.attr = a, .polling = 1};
    cli_start(&c, srv_listen(&v, &a));
    assert_int_equal(srv_establish(&v, 5000), 0);
    /* A live peer: 600 ms, 12 of its intervals, never declared dead. */
    int64_t t0 = now_ms();
    while (now_ms() - t0 < 600) {
        assert_int_equal(mroce_cm_poll(v.cm, v.s.conn), 0);
        usleep(20000);
    }
    struct mroce_cm_counters k;
    mroce_cm_get_counters(v.cm, &k);
    assert_true(k.rx_keepalive >= 5);
    assert_true(k.tx_keepalive >= 5);
    /* A frozen peer: it stops polling (so sends nothing), its socket
     * stays open; found after 4 x 50 ms. */
    cli_join(&c);
    assert_int_equal(c.poll_rc, 0);
    t0 = now_ms();
    int rc = 0;
    while (!rc && now_ms() - t0 < 3000) {
        rc = mroce_cm_poll(v.cm, v.s.conn);
        usleep(5000);
    }
    int64_t took = now_ms() - t0;
    assert_int_equal(rc, 1);
    assert_true(took >= 150 && took < 2000);
    assert_int_not_equal(mroce_conn_state(v.s.conn), MROCE_CONN_CONNECTED);
    char buf[8];
    assert_int_equal(mroce_cm_recv(v.cm, buf, sizeof(buf), 0), MROCE_ESTATE);
    cli_free(&c);
    srv_free(&v);
}

/* ---- The listener against hostile connectors (R-CM-13) ---- */

static int raw_dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Everything the server sent to fd within ms (until it closed). */
static size_t raw_drain(int fd, uint8_t *buf, size_t cap, int ms)
{
    size_t n = 0;
    int64_t dl = now_ms() + ms;
    while (n < cap && now_ms() < dl) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(dl - now_ms())) <= 0)
            break;
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    return n;
}

static int raw_send(int fd, const void *b, size_t n)
{
    return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

enum {
    H_GARBAGE,
    H_BIG1,
    H_BIG2,
    H_SIX,
    H_IDLE,
    H_CLOSE,
    H_V1,
    H_READY,
    H_BYE,
    H_N
};

static int hostile_connect(int kind, uint16_t port)
{
    int fd = raw_dial(port);
    uint8_t h[CM_HDR_LEN];
    cm_hdr_put(h, CM_HELLO, 0);
    switch (kind) {
    case H_GARBAGE:
        raw_send(fd, "GET / HTTP/1.0\r\n\r\n", 18);
        break;
    case H_BIG1:
    case H_BIG2:
        mroce_be32_put(h + 8, kind == H_BIG1 ? 8193 : 0xFFFFFFFFu);
        raw_send(fd, h, sizeof(h));
        break;
    case H_SIX:
        raw_send(fd, h, 6);
        break;
    case H_CLOSE:
        close(fd);
        return -1;
    case H_V1:
        h[4] = 1;
        mroce_be32_put(h + 8, 48);
        raw_send(fd, h, sizeof(h));
        break;
    case H_READY:
    case H_BYE:
        cm_hdr_put(h, kind == H_READY ? CM_READY : CM_BYE, 0);
        raw_send(fd, h, sizeof(h));
        break;
    default: /* idle */
        break;
    }
    return fd;
}

static void test_listener_hostile(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.hello_timeout_ms = 400};
    struct srv v;
    uint16_t port = srv_listen(&v, &a);
    int fds[H_N];
    for (int k = 0; k < H_N; k++)
        fds[k] = hostile_connect(k, port);
    struct cli c = {0};
    int64_t t0 = now_ms();
    cli_start(&c, port);
    assert_int_equal(srv_establish(&v, 5000), 0);
    int64_t took = now_ms() - t0;
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    /* Served at once, not after the silent connectors' time. */
    assert_true(took < 400 + 1000);
    /* Let the rest be judged. */
    struct mroce_cm *extra = NULL;
    assert_int_equal(mroce_cm_accept(v.l, 700, &extra), MROCE_EAGAIN);
    struct mroce_cm_listener_counters k;
    mroce_cm_listener_get_counters(v.l, &k);
    assert_int_equal(k.accepted, H_N + 1);
    assert_int_equal(k.handed, 1);
    assert_int_equal(k.dropped, 1);  /* garbage: not a CM peer */
    assert_int_equal(k.rejected, 5); /* 8193, 0xFFFFFFFF, v1, READY, BYE */
    assert_int_equal(k.closed, 1);
    assert_int_equal(k.timeouts, 2); /* 6 bytes, idle */
    /* What each connector got: nothing, or one REJECT with its reason. */
    static const int want[H_N] = {[H_BIG1] = MROCE_CM_REJ_MALFORMED,
                                  [H_BIG2] = MROCE_CM_REJ_MALFORMED,
                                  [H_V1] = MROCE_CM_REJ_VERSION,
                                  [H_READY] = MROCE_CM_REJ_UNEXPECTED,
                                  [H_BYE] = MROCE_CM_REJ_UNEXPECTED};
    for (int i = 0; i < H_N; i++) {
        if (fds[i] < 0)
            continue;
        uint8_t buf[512];
        size_t n = raw_drain(fds[i], buf, sizeof(buf), 200);
        if (!want[i]) {
            assert_int_equal(n, 0);
        } else {
            assert_true(n >= CM_HDR_LEN + CM_REJECT_FIXED);
            assert_int_equal(buf[5], CM_REJECT);
            assert_int_equal(n, CM_HDR_LEN + mroce_be32_get(buf + 8));
            assert_int_equal(mroce_be16_get(buf + CM_HDR_LEN), want[i]);
        }
        close(fds[i]);
    }
    cli_free(&c);
    srv_free(&v);
}

static void test_listener_evicts(void **state)
{
    (void)state;
    struct mroce_cm_attr a = {.hello_timeout_ms = 3000, .max_pending = 2};
    struct srv v;
    uint16_t port = srv_listen(&v, &a);
    int fds[5];
    for (int i = 0; i < 5; i++)
        fds[i] = raw_dial(port);
    struct cli c = {0};
    cli_start(&c, port);
    /* The real client evicts an idle one and is served at once. */
    int64_t t0 = now_ms();
    assert_int_equal(srv_establish(&v, 5000), 0);
    assert_true(now_ms() - t0 < 2000);
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    struct mroce_cm_listener_counters k;
    mroce_cm_listener_get_counters(v.l, &k);
    assert_int_equal(k.evicted, 4);
    for (int i = 0; i < 5; i++)
        close(fds[i]);
    cli_free(&c);
    srv_free(&v);
}

/* A HELLO that fails a check gets a REJECT and nothing else: no HELLO,
 * no connection id. */
static void test_nothing_before_hello(void **state)
{
    (void)state;
    struct srv v;
    uint16_t port = srv_listen(&v, NULL);
    struct side s;
    assert_int_equal(side_open(&s, 5), 0); /* announces 127.0.0.5 */
    struct cm_hello h;
    memset(&h, 0, sizeof(h));
    mroce_conn_get_params(s.conn, &h.p);
    h.proto_min = h.proto_max = 1;
    h.modes = MROCE_CM_MODE_NONE;
    static uint8_t msg[CM_MSG_MAX];
    int n = cm_encode_hello(&h, msg, sizeof(msg));
    int fd = raw_dial(port);
    assert_int_equal(raw_send(fd, msg, (size_t)n), 0);
    struct mroce_cm *cm = NULL;
    assert_int_equal(mroce_cm_accept(v.l, 500, &cm), MROCE_EAGAIN);
    uint8_t buf[1024];
    size_t got = raw_drain(fd, buf, sizeof(buf), 500);
    assert_true(got >= CM_HDR_LEN);
    assert_int_equal(buf[5], CM_REJECT);
    assert_int_equal(got, CM_HDR_LEN + mroce_be32_get(buf + 8)); /* only */
    assert_int_equal(mroce_be16_get(buf + CM_HDR_LEN), MROCE_CM_REJ_ADDRESS);
    struct mroce_conn_params p;
    mroce_conn_get_params(v.s.conn, &p);
    uint8_t id[4];
    mroce_be32_put(id, p.conn_id);
    assert_null(memmem(buf, got, id, 4));
    close(fd);
    side_close(&s);
    srv_free(&v);
}

/* The client answers a server whose header it cannot read (another CM
 * version) with REJECT VERSION (R-CM-2), naming the versions it speaks. */
static void test_client_answers_bad_header(void **state)
{
    (void)state;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(ls, 1), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    struct cli c = {0};
    cli_start(&c, ntohs(sa.sin_port));
    int fd = accept(ls, NULL, NULL);
    assert_true(fd >= 0);
    uint8_t buf[CM_MSG_MAX];
    size_t got = 0;
    while (got < CM_HDR_LEN ||
           got < CM_HDR_LEN + mroce_be32_get(buf + 8)) { /* its HELLO */
        ssize_t r = recv(fd, buf + got, sizeof(buf) - got, 0);
        assert_true(r > 0);
        got += (size_t)r;
    }
    uint8_t h[CM_HDR_LEN];
    cm_hdr_put(h, CM_HELLO, 0);
    h[4] = 9; /* a future CM version */
    assert_int_equal(raw_send(fd, h, sizeof(h)), 0);
    cli_join(&c);
    assert_int_equal(c.rc, MROCE_EPROTO);
    assert_int_equal(c.reason, MROCE_CM_REJ_VERSION);
    got = raw_drain(fd, buf, sizeof(buf), 500);
    assert_true(got >= CM_HDR_LEN + CM_REJECT_FIXED);
    assert_int_equal(buf[5], CM_REJECT);
    assert_int_equal(mroce_be16_get(buf + CM_HDR_LEN), MROCE_CM_REJ_VERSION);
    assert_int_equal(buf[CM_HDR_LEN + 2], MROCE_CM_VERSION);
    close(fd);
    close(ls);
    cli_free(&c);
}

static void test_timeouts(void **state)
{
    (void)state;
    struct mroce_cm_listener *l;
    struct mroce_cm *cm;
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, NULL, &l), 0);
    assert_int_equal(mroce_cm_accept(l, 50, &cm), MROCE_EAGAIN);
    uint16_t port = mroce_cm_listener_port(l);
    mroce_cm_listener_close(l);
    /* Nobody listens now: dial retries until its deadline, then fails. */
    assert_true(mroce_cm_dial("127.0.0.1", port, 100, NULL, &cm) < 0);
    assert_null(cm);
    assert_int_equal(mroce_cm_dial("no.such.host.invalid", 1, 100, NULL, &cm),
                     MROCE_EINVAL);
    struct mroce_cm_attr bad = {.psk = key1, .psk_len = 8}; /* too short */
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, &bad, &l), MROCE_EINVAL);
}

/* ---- Two processes over the UDP datapath ---- */

#define XFER (1u << 20)

static uint16_t udp_port(int k)
{
    return (uint16_t)(30000 + (getpid() % 5000) * 4 + k);
}

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

static struct mroce_dp *dp_open(const char *ip, uint16_t port)
{
    struct mroce_dp_attr a = {
        .kind = MROCE_DP_UDP, .local_ip = ip, .port = port, .n_src_ports = 4};
    struct mroce_dp *dp = NULL;
    return mroce_dp_create(&a, &dp) ? NULL : dp; /* no assert: children */
}

static int end_conn(struct end *e, struct mroce_pd **pd)
{
    struct mroce_ctx *ctx = mroce_dp_ctx(e->dp);
    if (mroce_pd_alloc(ctx, pd) || mroce_cq_create(ctx, 1024, &e->cq))
        return -1;
    struct mroce_conn_attr ca = {.send_cq = e->cq,
                                 .recv_cq = e->cq,
                                 .n_paths = 4,
                                 .min_rto_ns = 1000000,
                                 .max_rto_ns = 50000000,
                                 .retry_cnt = 3};
    return mroce_conn_create(*pd, &ca, &e->conn);
}

static int end_open(struct end *e, uint16_t port)
{
    char ip[MROCE_CM_ADDRSTRLEN];
    if (mroce_cm_local_ip(e->cm, ip, sizeof(ip)))
        return -1;
    e->dp = dp_open(ip, port);
    struct mroce_pd *pd;
    e->buf = calloc(1, XFER);
    if (!e->dp || !e->buf || end_conn(e, &pd))
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

static const struct mroce_cm_attr xfer_attr = {.psk = key1, .psk_len = 32};

/* Child: writes its pattern into the parent's buffer with one WRITE_IMM,
 * then waits for the parent's "ok" and closes. */
static int child_writer(uint16_t port)
{
    struct end e = {0};
    if (mroce_cm_dial("127.0.0.1", port, 5000, &xfer_attr, &e.cm) ||
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
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, &xfer_attr, &l), 0);
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
    /* The key and the datapath's crypto provider: encrypted (R-CM-9). */
    assert_int_equal(mroce_conn_sec_mode(e.conn), MROCE_SEC_ENCRYPT);
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
    if (mroce_cm_dial("127.0.0.1", port, 5000, NULL, &e.cm) ||
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
    assert_int_equal(mroce_cm_listen("127.0.0.1", 0, NULL, &l), 0);
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

/* ---- ACKM, a feature of the HELLO (R-CM-7, R-VER-5) ---- */

/* Whether ACKM is in effect on `me`'s connection, seen from outside: an
 * ACKM from the peer's address (acknowledging nothing: count 0, a PSN
 * never sent) is an ACK dropped as bogus when it is, an unknown opcode
 * when it is not. */
static int ackm_in_effect(const struct side *me, const struct side *peer)
{
    struct mroce_conn_params mine, theirs;
    mroce_conn_get_params(me->conn, &mine);
    mroce_conn_get_params(peer->conn, &theirs);
    struct mroce_hdr h = {.opcode = MROCE_OP_ACKM, .conn = mine.conn_id};
    h.sack_high = 77;
    mroce_sack_set(h.sack, 0);
    uint8_t pl[MROCE_ACKM_PRE_LEN], buf[256];
    size_t len = mroce_ackm_put(pl, 0, NULL, 0);
    int n = mroce_wire_encode(&h, pl, (uint32_t)len, buf, sizeof(buf));
    assert_true(n > 0);
    struct mroce_pkt_meta m = {.src = theirs.addr, .dst = mine.addr};
    m.src_port = 49152;
    m.dst_port = mine.udp_port;
    struct mroce_ctx_counters k0, k1;
    struct mroce_conn_counters c0, c1;
    mroce_ctx_get_counters(me->ctx, &k0);
    mroce_conn_get_counters(me->conn, &c0);
    mroce_ctx_rx(me->ctx, 1000, &m, buf, (size_t)n);
    mroce_ctx_get_counters(me->ctx, &k1);
    mroce_conn_get_counters(me->conn, &c1);
    int on = c1.drop_bad_ack == c0.drop_bad_ack + 1;
    int off = k1.drop_bad_opcode == k0.drop_bad_opcode + 1;
    assert_int_equal(on + off, 1); /* one or the other */
    return on;
}

/* Both announce ACKM (the default): in effect on both connections; one
 * side with ackm_off: announced by the other only, in effect on
 * neither, and the set-up still succeeds (the feature is never
 * required). */
static void ackm_case(uint8_t srv_off, uint8_t cli_off)
{
    struct srv v;
    struct cli c = {0};
    c.s.ackm_off = cli_off;
    cli_start(&c, srv_listen_opt(&v, NULL, srv_off));
    assert_int_equal(srv_establish(&v, 5000), 0);
    cli_join(&c);
    assert_int_equal(c.rc, 0);
    struct mroce_conn_params p;
    mroce_conn_get_params(v.s.conn, &p);
    assert_int_equal(p.features & MROCE_FEAT_ACKM, srv_off ? 0 : 4);
    mroce_conn_get_params(c.s.conn, &p);
    assert_int_equal(p.features & MROCE_FEAT_ACKM, cli_off ? 0 : 4);
    int want = !srv_off && !cli_off;
    assert_int_equal(ackm_in_effect(&v.s, &c.s), want);
    assert_int_equal(ackm_in_effect(&c.s, &v.s), want);
    cli_free(&c);
    srv_free(&v);
}

static void test_ackm_negotiated(void **state)
{
    (void)state;
    ackm_case(0, 0);
    ackm_case(1, 0);
    ackm_case(0, 1);
}

/* R-CM-7: our HELLO carries bit 2 exactly when the connection announces
 * it, next to PSK's bit; a peer's bit reaches the parameters handed to
 * mroce_conn_connect, and PSK's does not. */
static void test_ackm_hello_bit(void **state)
{
    (void)state;
    struct cm_policy pol = {0};
    struct mroce_cm_attr a = {0};
    pol.attr = &a;
    struct cm_hello h;
    memset(&h, 0, sizeof(h));
    h.p.features = MROCE_FEAT_ACKM;
    cm_check_fill_ours(&pol, &h);
    assert_int_equal(h.features, 0x4);
    assert_int_equal(h.required, 0); /* never required */
    memset(&h, 0, sizeof(h));
    cm_check_fill_ours(&pol, &h);
    assert_int_equal(h.features, 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_establish_plain),
        cmocka_unit_test(test_establish_psk),
        cmocka_unit_test(test_ackm_negotiated),
        cmocka_unit_test(test_ackm_hello_bit),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_mode_checked_at_establish),
        cmocka_unit_test(test_modes_keyed),
        cmocka_unit_test(test_address_allowed),
        cmocka_unit_test(test_app_refuses),
        cmocka_unit_test(test_forged_and_replayed),
        cmocka_unit_test(test_keepalive),
        cmocka_unit_test(test_listener_hostile),
        cmocka_unit_test(test_listener_evicts),
        cmocka_unit_test(test_nothing_before_hello),
        cmocka_unit_test(test_client_answers_bad_header),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_two_process_write),
        cmocka_unit_test(test_killed_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
