/* Connection manager, pure parts: the message codec (round trip, every
 * truncation, bad magic and version, oversized, reserved fields, lengths
 * that disagree, extensions), the checks of a peer's HELLO in the order
 * of R-CM-8 (versions, features, key, mode, addresses, ranges, limits),
 * and src/cm's encoder and key schedule against the vectors of
 * docs/spec.md section 4.6 (generated independently by
 * tests/cm/cm_vectors.py). Sockets are in cm_chan_test.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_cm.h>

#include "cm/auth.h"
#include "cm/check.h"
#include "cm/msg.h"
#include "wire/be.h"

/* ---- The spec's example (section 4.6, tests/cm/cm_vectors.py) ---- */

static void example_params(struct mroce_conn_params *p, int server)
{
    memset(p, 0, sizeof(*p));
    p->conn_id = server ? 0x1A2B3C4D : 0x00C0FFEE;
    p->udp_port = server ? 4797 : 4798;
    p->n_planes = 2;
    for (int i = 0; i < 2; i++) {
        p->plane_addr[i].family = MROCE_AF_INET;
        uint8_t ip[4] = {10, (uint8_t)i, 0, (uint8_t)(server ? 2 : 1)};
        memcpy(p->plane_addr[i].ip, ip, 4);
    }
    p->addr = p->plane_addr[0];
    p->n_paths = server ? 32 : 16;
    p->n_streams = server ? 1 : 2;
    p->mtu = 4096;
    p->dsn_window = server ? 8192 : 4096;
    p->msg_window = server ? 128 : 64;
    p->max_rd = 16;
    p->path_window = 256;
    p->ack_every = 1;
    p->ack_delay_ns = 2000;
    p->min_rto_ns = 1000000;
    p->max_rto_ns = 100000000;
    p->retry_cnt = 15;
    p->rnr_retry = 7;
    p->rnr_max_us = 100;
    p->init_psn = server ? 0x6C078965 : 0x9E3779B9;
    p->init_dsn = server ? 0x5851F42D : 0x7F4A7C15;
    p->init_msn = server ? 0x4C957F2D : 0x2545F491;
}

static void example_hello(struct cm_hello *h, int server, int psk)
{
    memset(h, 0, sizeof(*h));
    h->proto_min = h->proto_max = 1;
    h->modes = psk ? 7 : MROCE_CM_MODE_NONE;
    for (int i = 0; i < CM_NONCE_LEN; i++)
        h->nonce[i] = (uint8_t)(i + (server ? 0x20 : 0));
    h->keepalive_ms = server ? 2000 : 1000;
    example_params(&h->p, server);
    h->blob = server ? NULL : (const uint8_t *)"demo";
    h->blob_len = server ? 0 : 4;
}

static void example_key(uint8_t key[32])
{
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(0x40 + i);
}

/* The hex dump of vector `name` in docs/spec.md: its length, or -1. */
static int spec_vector(const char *name, uint8_t *out, size_t cap)
{
    FILE *f = fopen(MROCE_SOURCE_DIR "/docs/spec.md", "r");
    assert_non_null(f);
    char line[512], want[128];
    snprintf(want, sizeof(want), "Vector `%s` (", name);
    int state = 0; /* 0 looking, 1 before the fence, 2 in the dump */
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (state == 0 && strncmp(line, want, strlen(want)) == 0)
            state = 1;
        else if (state == 1 && strncmp(line, "```", 3) == 0)
            state = 2;
        else if (state == 2 && strncmp(line, "```", 3) == 0)
            break;
        else if (state == 2) {
            unsigned v;
            for (char *p = line + 4; sscanf(p, " %2x", &v) == 1 && n < cap;) {
                out[n++] = (uint8_t)v;
                while (*p == ' ')
                    p++;
                p += 2;
            }
        }
    }
    fclose(f);
    return state == 2 ? (int)n : -1;
}

static void expect_vector(const char *name, const uint8_t *got, int len)
{
    uint8_t want[CM_MSG_MAX];
    int n = spec_vector(name, want, sizeof(want));
    if (n != len)
        fail_msg("vector %s: spec has %d bytes, src/cm made %d", name, n, len);
    assert_memory_equal(want, got, (size_t)n);
}

static int example_encode(struct cm_hello *h, const struct cm_psk *k,
                          const uint8_t *prefix, size_t plen, uint8_t *out)
{
    if (k) {
        h->features = h->required = CM_FEAT_PSK;
        memcpy(h->psk_id, k->psk_id, CM_PSK_ID_LEN);
    }
    int n = cm_encode_hello(h, out, CM_MSG_MAX);
    assert_true(n > 0);
    if (k)
        assert_int_equal(cm_auth_hello_tag(k, prefix, plen, out,
                                           (size_t)n - CM_TAG_LEN,
                                           out + n - CM_TAG_LEN),
                         0);
    return n;
}

static void test_vectors_plain(void **state)
{
    (void)state;
    static uint8_t buf[CM_MSG_MAX];
    struct cm_hello h;
    example_hello(&h, 0, 0);
    expect_vector("cm-hello-c", buf, example_encode(&h, NULL, NULL, 0, buf));
    example_hello(&h, 1, 0);
    expect_vector("cm-hello-s", buf, example_encode(&h, NULL, NULL, 0, buf));
    expect_vector("cm-ready", buf,
                  cm_encode_simple(CM_READY, NULL, 0, buf, sizeof(buf)));
    expect_vector("cm-reject-version", buf,
                  cm_encode_reject(MROCE_CM_REJ_VERSION, 0,
                                   "unsupported CM version", buf, sizeof(buf)));
}

static void test_vectors_psk(void **state)
{
    (void)state;
    static uint8_t hc[CM_MSG_MAX], hs[CM_MSG_MAX], buf[CM_MSG_MAX];
    uint8_t key[32];
    example_key(key);
    struct cm_psk k;
    assert_int_equal(cm_auth_psk(key, 32, &k), 0);
    struct cm_hello c, s;
    example_hello(&c, 0, 1);
    example_hello(&s, 1, 1);
    int lc = example_encode(&c, &k, NULL, 0, hc);
    int ls = example_encode(&s, &k, hc, (size_t)lc, hs);
    expect_vector("cm-hello-c-psk", hc, lc);
    expect_vector("cm-hello-s-psk", hs, ls);
    uint8_t th[CM_HASH_LEN], mac[CM_TAG_LEN];
    struct cm_session ses;
    assert_int_equal(cm_auth_transcript(hc, (size_t)lc, hs, (size_t)ls, th), 0);
    assert_int_equal(cm_auth_session(&k, c.nonce, s.nonce, th, &ses), 0);
    for (int side = 0; side < 2; side++) {
        assert_int_equal(cm_auth_ready_mac(&ses, side, th, mac), 0);
        int n = cm_encode_simple(CM_READY, mac, CM_TAG_LEN, buf, sizeof(buf));
        expect_vector(side ? "cm-ready-s-psk" : "cm-ready-c-psk", buf, n);
    }
    /* The first message after READY of each side: APP, KEEPALIVE. */
    cm_hdr_put(buf, CM_APP, 5 + CM_MSG_TAG_LEN);
    memcpy(buf + CM_HDR_LEN, "hello", 5);
    cm_auth_msg_tag(&ses, 0, 0, buf, buf + CM_HDR_LEN, 5, buf + CM_HDR_LEN + 5);
    expect_vector("cm-app-c-psk", buf, CM_HDR_LEN + 5 + CM_MSG_TAG_LEN);
    cm_hdr_put(buf, CM_KEEPALIVE, CM_MSG_TAG_LEN);
    cm_auth_msg_tag(&ses, 1, 0, buf, buf + CM_HDR_LEN, 0, buf + CM_HDR_LEN);
    expect_vector("cm-keepalive-s-psk", buf, CM_HDR_LEN + CM_MSG_TAG_LEN);
}

/* ---- Codec ---- */

static void test_hello_roundtrip(void **state)
{
    (void)state;
    static uint8_t buf[CM_MSG_MAX];
    struct cm_hello h, q;
    example_hello(&h, 0, 0);
    h.p.transport = MROCE_TRANSPORT_ROCEV2;
    h.p.n_qps = 3;
    for (int i = 0; i < 3; i++) {
        h.p.qpn[i] = 0x100u + (uint32_t)i;
        h.p.psn[i] = 0xabc00u + (uint32_t)i;
    }
    h.transport = MROCE_TRANSPORT_ROCEV2;
    static const uint8_t ext[] = {0x00, 0x07, 0x00, 0x02, 0xAA, 0xBB};
    h.ext = ext;
    h.ext_len = sizeof(ext);
    int n = cm_encode_hello(&h, buf, sizeof(buf));
    assert_int_equal(n, CM_HDR_LEN + CM_HELLO_FIXED + 2 * CM_ADDR_LEN + 24 + 4 +
                            sizeof(ext));
    struct cm_hdr hd;
    int rej;
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &hd, NULL, &rej), 0);
    assert_int_equal(hd.type, CM_HELLO);
    assert_int_equal(cm_decode_hello(buf + CM_HDR_LEN, hd.len, &q, NULL), 0);
    assert_memory_equal(&h.p, &q.p, sizeof(q.p));
    assert_int_equal(q.keepalive_ms, 1000);
    assert_memory_equal(q.nonce, h.nonce, CM_NONCE_LEN);
    assert_int_equal(q.blob_len, 4);
    assert_memory_equal(q.blob, "demo", 4);
    assert_int_equal(q.ext_len, sizeof(ext));
    assert_null(q.tag);
    assert_int_equal(cm_hello_unknown_critical(&q), 0); /* 0x0007: ignored */
}

static void test_hdr_errors(void **state)
{
    (void)state;
    uint8_t buf[CM_MSG_MAX];
    struct cm_hdr h;
    const char *why = NULL;
    int rej;
    int n = cm_encode_simple(CM_READY, NULL, 0, buf, sizeof(buf));
    assert_int_equal(n, CM_HDR_LEN);
    for (int k = 0; k < CM_HDR_LEN; k++) /* truncated: not yet */
        assert_int_equal(cm_hdr_decode(buf, (size_t)k, &h, NULL, &rej),
                         MROCE_EAGAIN);
    buf[4] = 1; /* version 1: answered with REJECT VERSION */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why, &rej),
                     MROCE_EPROTO);
    assert_int_equal(rej, MROCE_CM_REJ_VERSION);
    assert_non_null(strstr(why, "version"));
    buf[4] = MROCE_CM_VERSION;
    buf[0] = 'X'; /* bad magic: not a CM peer, answered with nothing */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why, &rej),
                     MROCE_EPROTO);
    assert_int_equal(rej, 0);
    buf[0] = 'M';
    buf[5] = 99; /* unknown type */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why, &rej),
                     MROCE_EPROTO);
    assert_int_equal(rej, MROCE_CM_REJ_MALFORMED);
    buf[5] = CM_HELLO;
    static const uint32_t big[] = {MROCE_CM_MAX_BODY + 1, 0xFFFFFFFFu};
    for (int i = 0; i < 2; i++) { /* oversized: refused unread */
        mroce_be32_put(buf + 8, big[i]);
        assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why, &rej),
                         MROCE_EPROTO);
        assert_non_null(strstr(why, "oversized"));
    }
    buf[5] = CM_READY;
    mroce_be32_put(buf + 8, 4); /* READY: 0 or 32 bytes */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why, &rej),
                     MROCE_EPROTO);
    buf[5] = CM_HELLO;
    mroce_be32_put(buf + 8, 100); /* shorter than any HELLO */
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, &why, &rej),
                     MROCE_EPROTO);
}

/* Encodes the example, lets `mutate` change the body, expects EPROTO. */
static void hello_refused(void (*mutate)(uint8_t *body), const char *needle)
{
    static uint8_t buf[CM_MSG_MAX];
    struct cm_hello h, q;
    example_hello(&h, 0, 0);
    int n = cm_encode_hello(&h, buf, sizeof(buf));
    mutate(buf + CM_HDR_LEN);
    const char *why = "";
    assert_int_equal(
        cm_decode_hello(buf + CM_HDR_LEN, (size_t)n - CM_HDR_LEN, &q, &why),
        MROCE_EPROTO);
    if (!strstr(why, needle))
        fail_msg("wanted '%s', got '%s'", needle, why);
}

static void mut_family(uint8_t *b)
{
    b[58] = 5;
}
static void mut_no_planes(uint8_t *b)
{
    b[59] = 0;
}
static void mut_many_planes(uint8_t *b)
{
    b[59] = MROCE_MAX_PLANES + 1;
}
static void mut_qps(uint8_t *b)
{
    mroce_be16_put(b + 124, MROCE_MAX_QPS + 1);
}
static void mut_blob(uint8_t *b)
{
    mroce_be16_put(b + 126, MROCE_CM_MAX_BLOB + 1);
}
static void mut_reserved(uint8_t *b)
{
    b[131] = 1;
}
static void mut_padding(uint8_t *b)
{
    b[CM_HELLO_FIXED + 4] = 1; /* byte 4 of an IPv4 address */
}
static void mut_ext(uint8_t *b)
{
    mroce_be16_put(b + 128, 3); /* 3 bytes cannot hold an extension */
}
static void mut_required(uint8_t *b)
{
    mroce_be32_put(b + 8, 0x2); /* requires what it does not support */
}

static void test_hello_errors(void **state)
{
    (void)state;
    static uint8_t buf[CM_MSG_MAX];
    struct cm_hello h, q;
    example_hello(&h, 0, 0);
    int n = cm_encode_hello(&h, buf, sizeof(buf));
    const char *why;
    for (size_t k = 0; k < (size_t)n - CM_HDR_LEN; k++) /* truncations */
        assert_int_equal(cm_decode_hello(buf + CM_HDR_LEN, k, &q, &why),
                         MROCE_EPROTO);
    hello_refused(mut_family, "family");
    hello_refused(mut_no_planes, "plane");
    hello_refused(mut_many_planes, "plane");
    hello_refused(mut_qps, "QPs");
    hello_refused(mut_blob, "blob");
    hello_refused(mut_reserved, "reserved");
    hello_refused(mut_padding, "padding");
    hello_refused(mut_ext, "lengths");
    hello_refused(mut_required, "requires");
    /* Encoders refuse what decoders would. */
    h.blob_len = MROCE_CM_MAX_BLOB + 1;
    assert_int_equal(cm_encode_hello(&h, buf, sizeof(buf)), MROCE_EINVAL);
    example_hello(&h, 0, 0);
    h.p.plane_addr[1].family = MROCE_AF_INET6; /* mixed families */
    assert_int_equal(cm_encode_hello(&h, buf, sizeof(buf)), MROCE_EINVAL);
    example_hello(&h, 0, 0);
    assert_int_equal(cm_encode_hello(&h, buf, 20), MROCE_ENOBUFS);
    assert_int_equal(
        cm_encode_simple(CM_APP, buf, MROCE_CM_MAX_APP + 17, buf, sizeof(buf)),
        MROCE_EINVAL);
}

static void test_hello_extensions(void **state)
{
    (void)state;
    static uint8_t buf[CM_MSG_MAX];
    struct cm_hello h, q;
    example_hello(&h, 0, 0);
    /* a non-critical extension, then a critical one, both unknown */
    static const uint8_t ext[] = {0x00, 0x09, 0x00, 0x00, 0x80,
                                  0x01, 0x00, 0x01, 0xFF};
    h.ext = ext;
    h.ext_len = sizeof(ext);
    int n = cm_encode_hello(&h, buf, sizeof(buf));
    assert_int_equal(
        cm_decode_hello(buf + CM_HDR_LEN, (size_t)n - CM_HDR_LEN, &q, NULL), 0);
    assert_int_equal(cm_hello_unknown_critical(&q), 0x8001);
    /* An extension whose length runs past ext_len. */
    static const uint8_t bad[] = {0x00, 0x09, 0x00, 0x05, 0x01};
    h.ext = bad;
    h.ext_len = sizeof(bad);
    n = cm_encode_hello(&h, buf, sizeof(buf));
    const char *why = "";
    assert_int_equal(
        cm_decode_hello(buf + CM_HDR_LEN, (size_t)n - CM_HDR_LEN, &q, &why),
        MROCE_EPROTO);
    assert_non_null(strstr(why, "extension"));
}

static void test_reject_text(void **state)
{
    (void)state;
    uint8_t buf[600];
    char big[400];
    memset(big, 'a', sizeof(big));
    big[sizeof(big) - 1] = 0;
    big[0] = '\n';
    int n = cm_encode_reject(MROCE_CM_REJ_LIMIT, 77, big, buf, sizeof(buf));
    assert_int_equal(n, CM_HDR_LEN + CM_REJECT_FIXED + CM_REJECT_MAX_TEXT);
    struct cm_hdr h;
    int rej;
    assert_int_equal(cm_hdr_decode(buf, (size_t)n, &h, NULL, &rej), 0);
    struct cm_reject r;
    assert_int_equal(cm_decode_reject(buf + CM_HDR_LEN, h.len, &r), 0);
    assert_int_equal(r.reason, MROCE_CM_REJ_LIMIT);
    assert_int_equal(r.detail, 77);
    assert_int_equal(r.vmin, MROCE_CM_VERSION);
    assert_int_equal(strlen(r.text), CM_REJECT_MAX_TEXT);
    assert_int_equal(r.text[0], '?'); /* control characters masked */
    assert_int_equal(cm_decode_reject(buf + CM_HDR_LEN, 7, &r), MROCE_EPROTO);
    assert_string_equal(mroce_cm_reject_str(MROCE_CM_REJ_AUTH),
                        "authentication");
}

/* ---- Checks (R-CM-7..R-CM-9) ---- */

struct chk {
    struct mroce_cm_attr attr;
    struct cm_psk psk;
    struct cm_policy pol;
    struct cm_hello h;
    uint8_t msg[CM_MSG_MAX];
    int len;
};

/* The client's example HELLO, as a server at 10.0.0.2 whose TCP peer is
 * 10.0.0.1 would check it; the peer's plane 1 is allowed by prefix. */
static void chk_init(struct chk *c, int server_key, int client_key)
{
    memset(c, 0, sizeof(*c));
    mroce_cm_prefix_parse("10.1.0.0/16", &c->attr.allow[0]);
    c->attr.n_allow = 1;
    uint8_t key[32];
    example_key(key);
    assert_int_equal(cm_auth_psk(key, 32, &c->psk), 0);
    c->pol.attr = &c->attr;
    c->pol.psk = server_key ? &c->psk : NULL;
    c->pol.tcp_peer = (struct mroce_addr){MROCE_AF_INET, {10, 0, 0, 1}};
    example_hello(&c->h, 0, client_key);
    c->len =
        example_encode(&c->h, client_key ? &c->psk : NULL, NULL, 0, c->msg);
}

static int chk_run(struct chk *c, struct cm_agreed *ag, struct cm_verdict *v)
{
    struct cm_hello q;
    assert_int_equal(cm_decode_hello(c->msg + CM_HDR_LEN,
                                     (size_t)c->len - CM_HDR_LEN, &q, NULL),
                     0);
    return cm_check_hello(&c->pol, &q, NULL, 0, c->msg, (size_t)c->len, ag, v);
}

/* Re-encodes c->h (after a test changed it). */
static void chk_encode(struct chk *c, int client_key)
{
    c->h.features = c->h.required = 0;
    c->len =
        example_encode(&c->h, client_key ? &c->psk : NULL, NULL, 0, c->msg);
}

static void test_check_pass(void **state)
{
    (void)state;
    struct chk c;
    struct cm_agreed ag;
    struct cm_verdict v;
    chk_init(&c, 0, 0);
    assert_int_equal(chk_run(&c, &ag, &v), 0);
    assert_int_equal(ag.mode, MROCE_CM_MODE_NONE);
    assert_false(ag.psk);
    assert_int_equal(ag.proto, 1);
    chk_init(&c, 1, 1);
    assert_int_equal(chk_run(&c, &ag, &v), 0);
    assert_true(ag.psk);
}

static void expect_reject(struct chk *c, int reason)
{
    struct cm_agreed ag;
    struct cm_verdict v;
    int rc = chk_run(c, &ag, &v);
    if (rc != reason)
        fail_msg("wanted %s, got %s (%s)", mroce_cm_reject_str(reason),
                 mroce_cm_reject_str(rc), rc ? v.why : "");
}

static void test_check_versions_features(void **state)
{
    (void)state;
    struct chk c;
    chk_init(&c, 0, 0);
    c.h.proto_min = c.h.proto_max = 2; /* a future MetaRoCE only */
    chk_encode(&c, 0);
    expect_reject(&c, MROCE_CM_REJ_PROTO_VERSION);
    chk_init(&c, 0, 0);
    c.h.proto_min = 1, c.h.proto_max = 3; /* a range that includes 1 */
    chk_encode(&c, 0);
    expect_reject(&c, 0);
    chk_init(&c, 0, 1); /* the client requires a key we lack */
    expect_reject(&c, MROCE_CM_REJ_FEATURE);
    chk_init(&c, 1, 0); /* we require the key it lacks: no downgrade */
    expect_reject(&c, MROCE_CM_REJ_FEATURE);
    chk_init(&c, 0, 0); /* it requires ACKM, which we speak (R-ACKM-1) */
    c.h.features = c.h.required = CM_FEAT_ACKM;
    c.len = example_encode(&c.h, NULL, NULL, 0, c.msg);
    expect_reject(&c, 0);
    chk_init(&c, 0, 0); /* it requires a bit nobody assigned */
    c.h.features = c.h.required = 0x80;
    c.len = example_encode(&c.h, NULL, NULL, 0, c.msg);
    expect_reject(&c, MROCE_CM_REJ_FEATURE);
    chk_init(&c, 0, 0);
    static const uint8_t crit[] = {0x80, 0x05, 0x00, 0x00};
    c.h.ext = crit;
    c.h.ext_len = sizeof(crit);
    chk_encode(&c, 0);
    expect_reject(&c, MROCE_CM_REJ_FEATURE);
}

static void test_check_key(void **state)
{
    (void)state;
    struct chk c;
    chk_init(&c, 1, 1);
    c.msg[CM_HDR_LEN + 64 + 3] ^= 1; /* a value changed in flight: mtu */
    expect_reject(&c, MROCE_CM_REJ_AUTH);
    chk_init(&c, 1, 1);
    assert_int_equal(c.msg[CM_HDR_LEN + 3], 7);
    c.msg[CM_HDR_LEN + 3] = MROCE_CM_MODE_NONE; /* a downgrade of the modes */
    expect_reject(&c, MROCE_CM_REJ_AUTH);
    chk_init(&c, 1, 1);
    c.msg[c.len - 1] ^= 0x80; /* the tag itself */
    expect_reject(&c, MROCE_CM_REJ_AUTH);
    chk_init(&c, 1, 1);
    c.psk.psk_id[0] ^= 1; /* another key */
    expect_reject(&c, MROCE_CM_REJ_AUTH);
}

static void test_check_modes(void **state)
{
    (void)state;
    struct chk c;
    chk_init(&c, 0, 0);
    c.h.modes = MROCE_CM_MODE_AUTH | MROCE_CM_MODE_ENC; /* requires AEAD */
    chk_encode(&c, 0);
    expect_reject(&c, MROCE_CM_REJ_SECURITY);
    chk_init(&c, 0, 0);
    c.attr.modes = MROCE_CM_MODE_ENC; /* we accept encryption only */
    expect_reject(&c, MROCE_CM_REJ_SECURITY);
    assert_int_equal(cm_check_our_modes(&c.pol) & MROCE_CM_MODE_NONE, 0);
}

static void test_check_addresses(void **state)
{
    (void)state;
    struct chk c;
    chk_init(&c, 0, 0);
    c.attr.n_allow = 0; /* plane 1's 10.1.0.1 is not the TCP peer's */
    expect_reject(&c, MROCE_CM_REJ_ADDRESS);
    c.attr.allow_any = 1;
    expect_reject(&c, 0);
    chk_init(&c, 0, 0);
    c.pol.tcp_peer.ip[3] = 9; /* a HELLO naming a third party */
    expect_reject(&c, MROCE_CM_REJ_ADDRESS);
    struct mroce_cm_prefix p;
    assert_int_equal(mroce_cm_prefix_parse("fd00::/8", &p), 0);
    assert_int_equal(p.len, 8);
    assert_int_equal(mroce_cm_prefix_parse("10.0.0.1", &p), 0);
    assert_int_equal(p.len, 32);
    assert_int_equal(mroce_cm_prefix_parse("10.0.0.0/33", &p), MROCE_EINVAL);
    assert_int_equal(mroce_cm_prefix_parse("10.0.0.0/", &p), MROCE_EINVAL);
    assert_int_equal(mroce_cm_prefix_parse("example.com", &p), MROCE_EINVAL);
    struct cm_policy pol = {.attr = &c.attr};
    c.attr.n_allow = 1;
    mroce_cm_prefix_parse("192.168.64.0/19", &c.attr.allow[0]);
    struct mroce_addr in = {MROCE_AF_INET, {192, 168, 95, 255}};
    struct mroce_addr out = {MROCE_AF_INET, {192, 168, 96, 0}};
    assert_true(cm_check_addr(&pol, &in));
    assert_false(cm_check_addr(&pol, &out));
}

static void test_check_ranges_limits(void **state)
{
    (void)state;
    struct chk c;
    chk_init(&c, 0, 0);
    c.h.p.mtu = 100;
    chk_encode(&c, 0);
    expect_reject(&c, MROCE_CM_REJ_PARAMS);
    chk_init(&c, 0, 0);
    c.h.p.min_rto_ns = 200000000; /* above max_rto */
    chk_encode(&c, 0);
    expect_reject(&c, MROCE_CM_REJ_PARAMS);
    chk_init(&c, 0, 0);
    c.h.p.conn_id = 0;
    chk_encode(&c, 0);
    expect_reject(&c, MROCE_CM_REJ_PARAMS);
    chk_init(&c, 0, 0);
    c.attr.max_blob = 3; /* the blob is 4 bytes */
    expect_reject(&c, MROCE_CM_REJ_LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_plain),
        cmocka_unit_test(test_vectors_psk),
        cmocka_unit_test(test_hello_roundtrip),
        cmocka_unit_test(test_hdr_errors),
        cmocka_unit_test(test_hello_errors),
        cmocka_unit_test(test_hello_extensions),
        cmocka_unit_test(test_reject_text),
        cmocka_unit_test(test_check_pass),
        cmocka_unit_test(test_check_versions_features),
        cmocka_unit_test(test_check_key),
        cmocka_unit_test(test_check_modes),
        cmocka_unit_test(test_check_addresses),
        cmocka_unit_test(test_check_ranges_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
