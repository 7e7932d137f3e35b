/* Section 4.5: the set-up exchange (R-CM-*). The agent runs the IUT's
 * connection manager as the server of one of its connections
 * (capability "cm"); the suite dials it and plays the client byte by
 * byte: a good exchange with and without a pre-shared key, every REJECT
 * reason a HELLO can draw, the order of the checks, messages after READY
 * (KEEPALIVE, BYE, tags), and connectors that misbehave. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "conform/cf.h"
#include "conform/cm.h"
#include "wire/be.h"

static const uint8_t cm_key[32] = {
    0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a,
    0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55,
    0x56, 0x57, 0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f};

struct cm_opt {
    bool psk;
    int hello_timeout_ms, keepalive_ms;
};

/* The IUT's connection in INIT and its CM listening; returns the TCP
 * port. */
static uint16_t cm_listen(struct cf_t *t, const struct cm_opt *o)
{
    cf_need(t, "cm");
    cf_open(t, &(struct cf_open){.no_connect = true});
    json_t *req = json_pack(
        "{s:s, s:i, s:i, s:i, s:i}", "cmd", "cm_listen", "conn", t->iut.conn,
        "hello_timeout_ms", o && o->hello_timeout_ms ? o->hello_timeout_ms : 0,
        "keepalive_ms", o && o->keepalive_ms ? o->keepalive_ms : 0,
        "timeout_ms", 3000);
    if (!o || !o->keepalive_ms)
        json_object_set_new(req, "no_keepalive", json_true());
    if (o && o->psk)
        json_object_set_new(req, "psk",
                            json_string("404142434445464748494a4b4c4d4e4f"
                                        "505152535455565758595a5b5c5d5e5f"));
    json_t *rep = cf_call(t, req);
    char code[32];
    bool ok = cf_reply_ok(rep, code, sizeof(code));
    uint16_t port = (uint16_t)json_integer_value(json_object_get(rep, "port"));
    json_decref(rep);
    CF_REQUIRE(t, ok, "cm_listen refused: %s", code);
    return port;
}

static int cm_dial(struct cf_t *t, uint16_t port)
{
    int fd = cf_cm_dial(t->iut.addr, port);
    CF_REQUIRE(t, fd >= 0, "cannot reach the IUT's CM on port %u", port);
    return fd;
}

/* The suite's HELLO for its connection (R-CM-6). */
static void cm_hello_mine(struct cf_t *t, struct cf_hello *h, bool psk)
{
    struct cf_params p;
    cf_my_params(t, &p);
    *h = (struct cf_hello){.proto_min = 1,
                           .proto_max = 1,
                           .modes = 0x1,
                           .conn_id = p.conn_id,
                           .udp_port = p.udp_port,
                           .af = 4,
                           .n_planes = 1,
                           .n_paths = p.n_paths,
                           .n_streams = p.n_streams,
                           .mtu = p.mtu,
                           .dsn_window = p.dsn_window,
                           .msg_window = p.msg_window,
                           .max_rd = p.max_rd,
                           .path_window = (uint16_t)p.path_window,
                           .ack_every = (uint16_t)p.ack_every,
                           .ack_delay = p.ack_delay_ns,
                           .min_rto = p.min_rto_ns,
                           .max_rto = p.max_rto_ns,
                           .retry_cnt = (uint8_t)p.retry_cnt,
                           .rnr_retry = (uint8_t)p.rnr_retry,
                           .rnr_max = p.rnr_max_us,
                           .init_psn = p.init_psn,
                           .init_dsn = p.init_dsn,
                           .init_msn = p.init_msn};
    int fam;
    cf_parse_ip(p.addr, &fam, h->addr[0]);
    if (getrandom(h->nonce, 32, 0) != 32)
        cf_pattern(h->nonce, 32, (uint32_t)cf_now());
    if (psk) {
        struct cf_psk k;
        cf_psk_init(&k, cm_key, sizeof(cm_key));
        h->features = h->required = CF_CM_FEAT_PSK;
        memcpy(h->psk_id, k.psk_id, 8);
        /* NONE only: with AUTH or ENC offered, an IUT with a crypto
         * provider agrees on ENC (R-CM-9), and the suite's packets after
         * the exchange are not sealed */
        h->modes = 0x1;
        h->tag_len = 32;
    }
}

/* Builds, tags (with a key) and sends a HELLO; returns its length. */
static size_t cm_send_hello(struct cf_t *t, int fd, const struct cf_hello *h,
                            uint8_t *buf, size_t cap)
{
    size_t n = cf_cm_hello_build(h, buf, cap);
    CF_REQUIRE(t, n, "HELLO too large");
    if (h->tag_len) {
        struct cf_psk k;
        cf_psk_init(&k, cm_key, sizeof(cm_key));
        cf_hmac(k.k_hello, 32, buf, n - 32, NULL, 0, buf + n - 32);
    }
    CF_REQUIRE(t, cf_cm_write(fd, buf, n), "TCP send failed");
    return n;
}

/* The agent's report of the exchange once its side finished: it may
 * still be applying the values when the suite has the READY already. */
static json_t *cm_result_done(struct cf_t *t)
{
    json_t *rep = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(rep);
        rep = cf_call(t, json_pack("{s:s}", "cmd", "cm_result"));
        if (json_is_true(json_object_get(rep, "done")))
            break;
        cf_pump(t, 10);
    }
    return rep;
}

/* A REJECT with `reason` arrives, then the IUT closes the connection. */
static void cm_expect_reject(struct cf_t *t, int fd, uint16_t reason,
                             const char *what)
{
    struct cf_cm_msg m;
    int n = cf_cm_recv(fd, &m, cf_ms(t, 2000));
    if (n <= 0) {
        cf_fail(t, "%s: no REJECT (%s)", what, n == 0 ? "closed" : "silence");
        return;
    }
    if (!CF_CHECK(t, m.type == CF_CM_REJECT,
                  "%s answered by type %u, not "
                  "REJECT",
                  what, m.type))
        return;
    uint16_t r = m.len >= 8 ? mroce_be16_get(m.body) : 0;
    CF_CHECK(t, r == reason, "%s: REJECT reason %u, expected %u", what, r,
             reason);
    CF_CHECK(t,
             m.len >= 8 && m.len <= 264 && m.magic == CF_CM_MAGIC &&
                 m.version == 2 && m.reserved == 0,
             "%s: a REJECT of %u bytes, version %u", what, m.len, m.version);
    uint8_t id[4];
    mroce_be32_put(id, t->iut.params.conn_id);
    CF_CHECK(t, !memmem(m.body, m.len, id, 4),
             "%s: the REJECT carries the server's connection id", what);
    CF_CHECK(t, cf_cm_recv(fd, &m, cf_ms(t, 1000)) == 0,
             "%s: the connection stayed open after the REJECT", what);
}

static uint32_t cm_reject_detail(struct cf_t *t, int fd, uint16_t reason,
                                 const char *what)
{
    struct cf_cm_msg m;
    int n = cf_cm_recv(fd, &m, cf_ms(t, 2000));
    CF_REQUIRE(t, n > 0 && m.type == CF_CM_REJECT && m.len >= 8,
               "%s: no REJECT", what);
    CF_CHECK(t, mroce_be16_get(m.body) == reason,
             "%s: REJECT reason %u, expected %u", what, mroce_be16_get(m.body),
             reason);
    return mroce_be32_get(m.body + 4);
}

/* ---- a good exchange ---- */

static void cm_finish(struct cf_t *t, const struct cf_hello *s)
{
    json_decref(cm_result_done(t)); /* the IUT's side has applied them */
    struct cf_params mine;
    cf_my_params(t, &mine);
    CF_CHECK(t,
             s->conn_id == t->iut.params.conn_id &&
                 s->udp_port == t->iut.params.udp_port &&
                 s->mtu == t->iut.params.mtu &&
                 s->n_paths == t->iut.params.n_paths &&
                 s->init_psn == t->iut.params.init_psn &&
                 s->init_dsn == t->iut.params.init_dsn &&
                 s->init_msn == t->iut.params.init_msn,
             "the server's HELLO differs from its connection's parameters");
    cf_apply_params(t, &mine);
    cf_state_is(t, "CONNECTED");
    cf_alive(t);
}

static void cm_server_hello(struct cf_t *t, int fd, struct cf_cm_msg *m,
                            struct cf_hello *s)
{
    int n = cf_cm_recv(fd, m, cf_ms(t, 2000));
    CF_REQUIRE(t, n > 0, "no answer to a good HELLO (%d)", n);
    CF_REQUIRE(t, m->type == CF_CM_HELLO,
               "a good HELLO answered by type %u "
               "(reason %u)",
               m->type, m->len >= 2 ? mroce_be16_get(m->body) : 0);
    CF_CHECK(t, m->magic == CF_CM_MAGIC && m->version == 2 && !m->reserved,
             "server HELLO header");
    CF_REQUIRE(t, cf_cm_hello_parse(m, s),
               "the server's HELLO of %u bytes breaks R-CM-6's layout", m->len);
    CF_CHECK(t,
             s->af == 4 && s->n_planes >= 1 && !s->reserved &&
                 s->proto_min <= 1 && s->proto_max >= 1 && s->transport == 0,
             "server HELLO fields: af %u planes %u reserved %u proto %u-%u",
             s->af, s->n_planes, s->reserved, s->proto_min, s->proto_max);
    for (int i = 4; i < 16; i++)
        CF_CHECK(t, !s->addr[0][i], "IPv4 address padding not zero");
}

static void cm_ok(struct cf_t *t)
{
    uint16_t port = cm_listen(t, NULL);
    int fd = cm_dial(t, port);
    struct cf_hello h, s;
    uint8_t buf[1024];
    cm_hello_mine(t, &h, false);
    cm_send_hello(t, fd, &h, buf, sizeof(buf));
    static struct cf_cm_msg m;
    cm_server_hello(t, fd, &m, &s);
    uint8_t r[12];
    cf_cm_write(fd, r, cf_cm_header(r, 2, CF_CM_READY, 0));
    CF_REQUIRE(t,
               cf_cm_recv(fd, &m, cf_ms(t, 2000)) > 0 &&
                   m.type == CF_CM_READY && m.len == 0,
               "no READY of 12 bytes after ours");
    cm_finish(t, &s);
    close(fd);
}

/* R-CM-10: with a key: tags, READY MACs, a secret; R-CM-9: the strongest
 * mode both HELLOs list, which then protects the connection's packets
 * with keys from that secret (R-AEAD-6). */
static void cm_psk_run(struct cf_t *t, uint8_t modes)
{
    uint16_t port = cm_listen(t, &(struct cm_opt){.psk = true});
    int fd = cm_dial(t, port);
    struct cf_hello h, s;
    static uint8_t hc[1024];
    cm_hello_mine(t, &h, true);
    h.modes = modes;
    size_t hc_len = cm_send_hello(t, fd, &h, hc, sizeof(hc));
    static struct cf_cm_msg m;
    cm_server_hello(t, fd, &m, &s);
    struct cf_psk k;
    cf_psk_init(&k, cm_key, sizeof(cm_key));
    uint8_t tag[32];
    cf_hmac(k.k_hello, 32, hc, hc_len, m.raw, m.total - 32, tag);
    CF_CHECK(t, !memcmp(tag, m.raw + m.total - 32, 32),
             "the server's HELLO tag is not HMAC(k_hello, HELLO_c || HELLO_s)");
    CF_CHECK(t, (s.features & CF_CM_FEAT_PSK) && (s.required & CF_CM_FEAT_PSK),
             "a server with a key does not require PSK");
    cf_psk_finish(&k, hc, hc_len, m.raw, m.total, h.nonce, s.nonce);
    uint8_t r[44];
    cf_cm_header(r, 2, CF_CM_READY, 32);
    memcpy(r + 12, k.ready[0], 32);
    cf_cm_write(fd, r, sizeof(r));
    CF_REQUIRE(t,
               cf_cm_recv(fd, &m, cf_ms(t, 2000)) > 0 &&
                   m.type == CF_CM_READY && m.len == 32,
               "no READY of 44 bytes after ours");
    CF_CHECK(t, !memcmp(m.body, k.ready[1], 32),
             "the server's READY MAC is wrong");
    uint8_t both = h.modes & s.modes;
    int mode = both & 0x4 ? 2 : both & 0x2 ? 1 : 0;
    static const char *names[] = {"none", "auth", "enc"};
    json_t *rep = cm_result_done(t);
    CF_CHECK(t, json_is_true(json_object_get(rep, "secret")),
             "no secret derived with a key");
    const char *got = json_string_value(json_object_get(rep, "mode"));
    CF_CHECK(t, got && !strcmp(got, names[mode]),
             "modes 0x%x and 0x%x agreed on %s, expected %s", h.modes, s.modes,
             got ? got : "?", names[mode]);
    json_decref(rep);
    if (mode)
        CF_REQUIRE(t,
                   cf_aead_init(&t->p->aead, mode, k.secret, t->p->my_id,
                                t->p->iut_id),
                   "the suite's key schedule failed");
    cm_finish(t, &s);
    close(fd);
}

static void cm_ok_psk(struct cf_t *t)
{
    cm_psk_run(t, 0x7);
}

static void cm_ok_psk_auth(struct cf_t *t)
{
    cm_psk_run(t, 0x3);
}

static void cm_ok_psk_none(struct cf_t *t)
{
    cm_psk_run(t, 0x1);
}

/* ---- headers (R-CM-2, R-CM-3) ---- */

static void cm_bad_magic(struct cf_t *t)
{
    int fd = cm_dial(t, cm_listen(t, NULL));
    uint8_t b[12] = {'G', 'E', 'T', ' ', '/',  ' ',
                     'H', 'T', 'T', 'P', '\r', '\n'};
    cf_cm_write(fd, b, sizeof(b));
    struct cf_cm_msg m;
    int n = cf_cm_recv(fd, &m, cf_ms(t, 2000));
    CF_CHECK(t, n == 0,
             "a wrong magic was answered (%d bytes) instead of a "
             "silent close",
             n);
    close(fd);
}

struct cm_hdr_case {
    uint8_t version, type;
    uint32_t len;
    uint16_t reason;
    const char *what;
};

static const struct cm_hdr_case cm_hdr_cases[] = {
    {9, CF_CM_HELLO, 148, CF_REJ_VERSION, "CM version 9"},
    {2, 77, 0, CF_REJ_MALFORMED, "an unknown type"},
    {2, CF_CM_HELLO, 8193, CF_REJ_MALFORMED, "a length of 8193"},
    {2, CF_CM_READY, 5, CF_REJ_MALFORMED, "a READY of 5 bytes"},
    {2, CF_CM_HELLO, 100, CF_REJ_MALFORMED, "a HELLO of 100 bytes"},
    {2, CF_CM_READY, 0, CF_REJ_UNEXPECTED, "READY before HELLO"},
    {2, CF_CM_BYE, 0, CF_REJ_UNEXPECTED, "BYE before HELLO"},
};

static void cm_bad_header(struct cf_t *t)
{
    const struct cm_hdr_case *c = t->test->arg;
    int fd = cm_dial(t, cm_listen(t, NULL));
    static uint8_t b[12 + 200];
    cf_cm_header(b, c->version, c->type, c->len);
    size_t body = c->len <= 200 ? c->len : 0;
    memset(b + 12, 0, body);
    cf_cm_write(fd, b, 12 + body);
    if (c->reason == CF_REJ_VERSION) {
        struct cf_cm_msg m;
        int n = cf_cm_recv(fd, &m, cf_ms(t, 2000));
        CF_REQUIRE(t, n > 0 && m.type == CF_CM_REJECT && m.len >= 8,
                   "no REJECT for %s", c->what);
        CF_CHECK(t,
                 mroce_be16_get(m.body) == CF_REJ_VERSION && m.body[2] <= 2 &&
                     m.body[3] >= 2,
                 "REJECT reason %u, versions %u-%u", mroce_be16_get(m.body),
                 m.body[2], m.body[3]);
    } else {
        cm_expect_reject(t, fd, c->reason, c->what);
    }
    close(fd);
}

/* ---- HELLOs (R-CM-6, R-CM-7, R-CM-8, R-CM-9) ---- */

struct cm_case {
    void (*spoil)(struct cf_hello *h, uint8_t *buf, size_t *n);
    uint16_t reason; /* 0: accepted */
    const char *what;
};

#define SPOIL(name, stmt)                                                      \
    static void name(struct cf_hello *h, uint8_t *b, size_t *n)                \
    {                                                                          \
        (void)h;                                                               \
        (void)b;                                                               \
        (void)n;                                                               \
        stmt;                                                                  \
    }
SPOIL(sp_len, h->len_delta = 4)
SPOIL(sp_af, h->af = 5)
SPOIL(sp_planes0, h->n_planes = 0)
SPOIL(sp_reserved, h->reserved = 1)
SPOIL(sp_pad, h->addr[0][7] = 1)
SPOIL(sp_required, h->required = 0x4)
SPOIL(sp_ext_fill, h->ext_len = 6; h->ext[1] = 1; h->ext[3] = 9)
SPOIL(sp_proto, h->proto_min = 2; h->proto_max = 3)
SPOIL(sp_proto_order, h->proto_min = 2; h->proto_max = 1)
SPOIL(sp_feat_req, h->features = h->required = 0x20)
SPOIL(sp_feat_unknown, h->features = 0x200)
SPOIL(sp_ext_critical, h->ext_len = 4; h->ext[0] = 0x80; h->ext[1] = 1)
SPOIL(sp_ext_ignored, h->ext_len = 6; h->ext[1] = 1; h->ext[3] = 2)
SPOIL(sp_modes_auth, h->modes = 0x2)
SPOIL(sp_address, h->addr[0][3] = 9)
SPOIL(sp_params, h->mtu = 100)
SPOIL(sp_order, h->proto_min = 2; h->proto_max = 3; h->addr[0][3] = 9;
      h->mtu = 100)
SPOIL(sp_order2, h->addr[0][3] = 9; h->mtu = 100)
SPOIL(sp_transport, h->transport = 1)
SPOIL(sp_blob, h->blob_len = 200; memset(h->blob, 'x', 200))

static const struct cm_case cm_cases[] = {
    {sp_len, CF_REJ_MALFORMED, "a HELLO longer than its layout"},
    {sp_af, CF_REJ_MALFORMED, "af 5"},
    {sp_planes0, CF_REJ_MALFORMED, "0 planes"},
    {sp_reserved, CF_REJ_MALFORMED, "the reserved field set"},
    {sp_pad, CF_REJ_MALFORMED, "IPv4 address padding set"},
    {sp_required, CF_REJ_MALFORMED, "a required bit not in features"},
    {sp_ext_fill, CF_REJ_MALFORMED, "extensions that do not fill ext_len"},
    {sp_proto, CF_REJ_PROTO_VERSION, "wire versions 2-3 only"},
    {sp_proto_order, CF_REJ_MALFORMED, "proto_min above proto_max"},
    {sp_feat_req, CF_REJ_FEATURE, "an unknown feature required"},
    {sp_feat_unknown, 0, "an unknown feature offered"},
    {sp_ext_critical, CF_REJ_FEATURE, "an unknown critical extension"},
    {sp_ext_ignored, 0, "an unknown extension without bit 15"},
    {sp_modes_auth, CF_REJ_SECURITY, "only AUTH, with no key"},
    {sp_address, CF_REJ_ADDRESS, "an address not the TCP peer's"},
    {sp_params, CF_REJ_PARAMS, "mtu 100"},
    {sp_order, CF_REJ_PROTO_VERSION,
     "bad wire version, address and mtu: the version first"},
    {sp_order2, CF_REJ_ADDRESS, "bad address and mtu: the address first"},
    {sp_transport, 11, "the RoCEv2 transport"},
    {sp_blob, 0, "a blob of 200 bytes"},
};

static void cm_hello_case(struct cf_t *t)
{
    const struct cm_case *c = t->test->arg;
    int fd = cm_dial(t, cm_listen(t, NULL));
    struct cf_hello h;
    static uint8_t buf[2048];
    cm_hello_mine(t, &h, false);
    size_t n = 0;
    c->spoil(&h, buf, &n);
    n = cf_cm_hello_build(&h, buf, sizeof(buf) - 8);
    if (h.len_delta > 0)
        n += (size_t)h.len_delta; /* the extra bytes the length claims */
    cf_cm_write(fd, buf, n);
    if (c->reason) {
        cm_expect_reject(t, fd, c->reason, c->what);
    } else {
        struct cf_cm_msg m;
        int r = cf_cm_recv(fd, &m, cf_ms(t, 2000));
        CF_CHECK(t, r > 0 && m.type == CF_CM_HELLO,
                 "%s was refused (type %u, reason %u)", c->what, m.type,
                 m.len >= 2 ? mroce_be16_get(m.body) : 0);
    }
    close(fd);
}

static void cm_detail_feature(struct cf_t *t)
{
    int fd = cm_dial(t, cm_listen(t, NULL));
    struct cf_hello h;
    static uint8_t buf[1024];
    cm_hello_mine(t, &h, false);
    h.features = h.required = 0x30;
    cf_cm_write(fd, buf, cf_cm_hello_build(&h, buf, sizeof(buf)));
    uint32_t d = cm_reject_detail(t, fd, CF_REJ_FEATURE, "features 0x30");
    CF_CHECK(t, d == 0x30,
             "REJECT FEATURE detail 0x%x, expected the "
             "unsupported bits 0x30",
             d);
    close(fd);
}

/* ---- keys (R-CM-10) ---- */

enum { PSK_NONE, PSK_TAG, PSK_ID, PSK_READY };

static void cm_psk_bad(struct cf_t *t)
{
    int how = *(const int *)t->test->arg;
    int fd = cm_dial(t, cm_listen(t, &(struct cm_opt){.psk = true}));
    struct cf_hello h;
    static uint8_t buf[1024];
    cm_hello_mine(t, &h, how != PSK_NONE);
    if (how == PSK_ID)
        h.psk_id[0] ^= 1;
    size_t n = cf_cm_hello_build(&h, buf, sizeof(buf));
    struct cf_psk k;
    cf_psk_init(&k, cm_key, sizeof(cm_key));
    if (h.tag_len)
        cf_hmac(k.k_hello, 32, buf, n - 32, NULL, 0, buf + n - 32);
    if (how == PSK_TAG)
        buf[n - 1] ^= 1;
    cf_cm_write(fd, buf, n);
    if (how == PSK_NONE) {
        cm_expect_reject(t, fd, CF_REJ_FEATURE,
                         "a HELLO without PSK to a server with a key");
    } else if (how == PSK_READY) {
        static struct cf_cm_msg m;
        CF_REQUIRE(
            t, cf_cm_recv(fd, &m, cf_ms(t, 2000)) > 0 && m.type == CF_CM_HELLO,
            "no server HELLO");
        uint8_t r[44] = {0};
        cf_cm_header(r, 2, CF_CM_READY, 32);
        cf_cm_write(fd, r, sizeof(r));
        cm_expect_reject(t, fd, CF_REJ_AUTH, "a READY with a wrong MAC");
    } else {
        cm_expect_reject(t, fd, CF_REJ_AUTH,
                         how == PSK_TAG ? "a wrong HELLO tag"
                                        : "another key's psk_id");
    }
    close(fd);
}

static const int psk_none = PSK_NONE, psk_tag = PSK_TAG, psk_id = PSK_ID,
                 psk_ready = PSK_READY;

/* ---- sequence and liveness (R-CM-4, R-CM-11, R-CM-12, R-CM-13) ---- */

/* R-CM-4: the server says nothing before the client's HELLO. */
static void cm_silent_server(struct cf_t *t)
{
    int fd = cm_dial(t, cm_listen(t, NULL));
    struct cf_cm_msg m;
    CF_CHECK(t, cf_cm_recv(fd, &m, cf_ms(t, 300)) == -1,
             "the server sent something before the client's HELLO");
    close(fd);
}

/* A good exchange (no key) on fd; true when both READYs passed. */
static bool cm_exchange(struct cf_t *t, int fd)
{
    struct cf_hello h, s;
    static uint8_t buf[1024];
    static struct cf_cm_msg m;
    cm_hello_mine(t, &h, false);
    cf_cm_write(fd, buf, cf_cm_hello_build(&h, buf, sizeof(buf)));
    if (cf_cm_recv(fd, &m, cf_ms(t, 2000)) <= 0 || m.type != CF_CM_HELLO ||
        !cf_cm_hello_parse(&m, &s))
        return false;
    uint8_t r[12];
    cf_cm_write(fd, r, cf_cm_header(r, 2, CF_CM_READY, 0));
    if (cf_cm_recv(fd, &m, cf_ms(t, 2000)) <= 0 || m.type != CF_CM_READY)
        return false;
    struct cf_params mine;
    cf_my_params(t, &mine);
    cf_apply_params(t, &mine);
    return true;
}

static void cm_keepalive(struct cf_t *t)
{
    int fd = cm_dial(t, cm_listen(t, &(struct cm_opt){.keepalive_ms = 150}));
    CF_REQUIRE(t, cm_exchange(t, fd), "the exchange failed");
    struct cf_cm_msg m;
    uint64_t t0 = cf_now();
    int n = cf_cm_recv(fd, &m, cf_ms(t, 1000));
    double ms = (double)(cf_now() - t0) / 1e6;
    CF_CHECK(t, n > 0 && m.type == CF_CM_KEEPALIVE && m.len == 0,
             "no KEEPALIVE from a server announcing 150 ms");
    CF_CHECK(t, ms < 150 * 1.5 + 50 * t->scale,
             "the first KEEPALIVE came after %.0f ms (150 announced)", ms);
    close(fd);
}

static void cm_bye(struct cf_t *t)
{
    int fd = cm_dial(t, cm_listen(t, NULL));
    CF_REQUIRE(t, cm_exchange(t, fd), "the exchange failed");
    cf_state_is(t, "CONNECTED");
    uint8_t b[12];
    cf_cm_write(fd, b, cf_cm_header(b, 2, CF_CM_BYE, 0));
    char st[32] = "";
    for (int i = 0;
         i < 50 && cf_state(t, st, sizeof(st)) && !strcmp(st, "CONNECTED"); i++)
        cf_pump(t, 10);
    CF_CHECK(t, strcmp(st, "CONNECTED"),
             "the connection stayed CONNECTED after the peer's BYE");
    close(fd);
}

static void cm_tcp_close(struct cf_t *t)
{
    int fd = cm_dial(t, cm_listen(t, NULL));
    CF_REQUIRE(t, cm_exchange(t, fd), "the exchange failed");
    close(fd);
    char st[32] = "";
    for (int i = 0;
         i < 50 && cf_state(t, st, sizeof(st)) && !strcmp(st, "CONNECTED"); i++)
        cf_pump(t, 10);
    CF_CHECK(t, strcmp(st, "CONNECTED"),
             "the connection stayed CONNECTED after its TCP connection ended");
}

/* R-CM-11: after READY with a key, a message with a wrong tag ends the
 * channel; the server's own KEEPALIVE carries the right tag. */
static void cm_app_tag(struct cf_t *t)
{
    uint16_t port =
        cm_listen(t, &(struct cm_opt){.psk = true, .keepalive_ms = 100});
    int fd = cm_dial(t, port);
    struct cf_hello h, s;
    static uint8_t hc[1024];
    cm_hello_mine(t, &h, true);
    size_t hc_len = cm_send_hello(t, fd, &h, hc, sizeof(hc));
    static struct cf_cm_msg m;
    CF_REQUIRE(
        t, cf_cm_recv(fd, &m, cf_ms(t, 2000)) > 0 && cf_cm_hello_parse(&m, &s),
        "no server HELLO");
    struct cf_psk k;
    cf_psk_init(&k, cm_key, sizeof(cm_key));
    cf_psk_finish(&k, hc, hc_len, m.raw, m.total, h.nonce, s.nonce);
    uint8_t r[44];
    cf_cm_header(r, 2, CF_CM_READY, 32);
    memcpy(r + 12, k.ready[0], 32);
    cf_cm_write(fd, r, sizeof(r));
    CF_REQUIRE(t,
               cf_cm_recv(fd, &m, cf_ms(t, 2000)) > 0 && m.type == CF_CM_READY,
               "no READY");
    CF_REQUIRE(t,
               cf_cm_recv(fd, &m, cf_ms(t, 1000)) > 0 &&
                   m.type == CF_CM_KEEPALIVE && m.len == 16,
               "no KEEPALIVE of 28 bytes");
    uint8_t seq[8] = {0}, mac[32], hdr[12];
    memcpy(hdr, m.raw, 12);
    uint8_t in[20];
    memcpy(in, seq, 8);
    memcpy(in + 8, hdr, 12);
    cf_hmac(k.k_msg[1], 32, in, sizeof(in), NULL, 0, mac);
    CF_CHECK(t, !memcmp(mac, m.body, 16),
             "the server's first KEEPALIVE tag is not HMAC(k_msg, seq || "
             "header)");
    uint8_t app[12 + 5 + 16];
    cf_cm_header(app, 2, CF_CM_APP, 5 + 16);
    memcpy(app + 12, "hello", 5);
    memset(app + 17, 0xA5, 16); /* a wrong tag */
    cf_cm_write(fd, app, sizeof(app));
    int n, left = 20;
    while ((n = cf_cm_recv(fd, &m, cf_ms(t, 1000))) > 0 &&
           m.type == CF_CM_KEEPALIVE && --left)
        ;
    CF_CHECK(t, n == 0,
             "the channel stayed open after an APP with a wrong "
             "tag");
    close(fd);
}

/* R-CM-13: silent and short connectors are dropped within the HELLO
 * time limit and keep nobody out. */
static void cm_bounds(struct cf_t *t)
{
    uint16_t port = cm_listen(t, &(struct cm_opt){.hello_timeout_ms = 300});
    int idle = cm_dial(t, port);
    int junk = cm_dial(t, port);
    uint8_t g[5] = {1, 2, 3, 4, 5};
    cf_cm_write(junk, g, sizeof(g)); /* too little */
    struct cf_cm_msg m;
    uint64_t t0 = cf_now();
    int n = cf_cm_recv(idle, &m, cf_ms(t, 3000));
    double ms = (double)(cf_now() - t0) / 1e6;
    CF_CHECK(t, n == 0 && ms < 1000 * t->scale,
             "a silent connector was kept (%d, %.0f ms; limit 300 ms)", n, ms);
    n = cf_cm_recv(junk, &m, cf_ms(t, 1000));
    CF_CHECK(t, n == 0, "a connector that sent 5 bytes was kept");
    int fd = cm_dial(t, port);
    CF_CHECK(t, cm_exchange(t, fd), "a client was not served after them");
    close(idle);
    close(junk);
    close(fd);
}

#define HDR(id, i)                                                             \
    CF_TESTA("cm.header." id, "4.5", "R-CM-2 R-CM-3 R-CM-5", MUST,             \
             "a bad message header: the REJECT R-CM-2 names", cm_bad_header,   \
             &cm_hdr_cases[i])
#define HELLO(id, rules, i)                                                    \
    CF_TESTA("cm.hello." id, "4.5", rules, MUST,                               \
             "a HELLO the server must refuse or take", cm_hello_case,          \
             &cm_cases[i])

const struct cf_test cf_t_cm[] = {
    CF_TEST("cm.ok", "4.5", "R-CM-1 R-CM-3 R-CM-4 R-CM-6 R-CM-9", MUST,
            "a good exchange without a key: HELLO, READY, CONNECTED", cm_ok),
    CF_TEST("cm.ok.psk", "4.5", "R-CM-10 R-CM-9 R-AEAD-6", MUST,
            "a good exchange with a key: tags, MACs, a secret, mode ENC",
            cm_ok_psk),
    CF_TEST("cm.ok.psk.auth", "4.5", "R-CM-9 R-AEAD-6", MUST,
            "with a key, NONE and AUTH offered: packets authenticated",
            cm_ok_psk_auth),
    CF_TEST("cm.ok.psk.none", "4.5", "R-CM-9", MUST,
            "with a key, only NONE offered: packets in mode none",
            cm_ok_psk_none),
    CF_TEST("cm.header.magic", "4.5", "R-CM-2", MUST,
            "a wrong magic: closed without a word", cm_bad_magic),
    HDR("version", 0),
    HDR("type", 1),
    HDR("too_long", 2),
    HDR("type_len", 3),
    HDR("hello_short", 4),
    CF_TESTA("cm.header.ready_first", "4.5", "R-CM-4 R-CM-5", MUST,
             "READY before HELLO: REJECT UNEXPECTED", cm_bad_header,
             &cm_hdr_cases[5]),
    CF_TESTA("cm.header.bye_first", "4.5", "R-CM-4 R-CM-5", MUST,
             "BYE before HELLO: REJECT UNEXPECTED", cm_bad_header,
             &cm_hdr_cases[6]),
    HELLO("length", "R-CM-6", 0),
    HELLO("af", "R-CM-6", 1),
    HELLO("planes0", "R-CM-6", 2),
    HELLO("reserved", "R-CM-6", 3),
    HELLO("pad", "R-CM-6", 4),
    HELLO("required", "R-CM-6 R-CM-7", 5),
    HELLO("ext_fill", "R-CM-6 R-CM-7", 6),
    HELLO("proto_version", "R-CM-7 R-CM-5", 7),
    HELLO("proto_order", "R-CM-7", 8),
    HELLO("feature_required", "R-CM-7", 9),
    HELLO("feature_ignored", "R-CM-7", 10),
    HELLO("ext_critical", "R-CM-7", 11),
    HELLO("ext_ignored", "R-CM-7", 12),
    HELLO("security", "R-CM-9", 13),
    HELLO("address", "R-CM-8", 14),
    HELLO("params", "R-CM-8 R-CONN-4", 15),
    HELLO("order.version", "R-CM-8", 16),
    HELLO("order.address", "R-CM-8", 17),
    HELLO("transport", "R-CM-8 R-CM-5", 18),
    HELLO("blob", "R-CM-6 R-CM-8", 19),
    CF_TEST("cm.reject.detail", "4.5", "R-CM-5 R-CM-7", MUST,
            "REJECT FEATURE names the bits", cm_detail_feature),
    CF_TESTA("cm.psk.required", "4.5", "R-CM-10 R-CM-7", MUST,
             "a server with a key requires PSK", cm_psk_bad, &psk_none),
    CF_TESTA("cm.psk.bad_tag", "4.5", "R-CM-10", MUST,
             "a wrong HELLO tag: REJECT AUTH", cm_psk_bad, &psk_tag),
    CF_TESTA("cm.psk.bad_id", "4.5", "R-CM-10", MUST,
             "another key's psk_id: REJECT AUTH", cm_psk_bad, &psk_id),
    CF_TESTA("cm.psk.bad_ready", "4.5", "R-CM-10", MUST,
             "a wrong READY MAC: REJECT AUTH", cm_psk_bad, &psk_ready),
    CF_TEST("cm.server_silent", "4.5", "R-CM-4", MUST,
            "the server sends nothing before the client's HELLO",
            cm_silent_server),
    CF_TEST("cm.keepalive", "4.5", "R-CM-12", MUST,
            "an idle server sends KEEPALIVEs at its interval", cm_keepalive),
    CF_TEST("cm.bye", "4.5", "R-CM-12 R-CONN-8", MUST,
            "a BYE ends the connection", cm_bye),
    CF_TEST("cm.tcp_close", "4.5", "R-CM-12", MUST,
            "the end of the TCP connection ends the connection", cm_tcp_close),
    CF_TEST("cm.app_tag", "4.5", "R-CM-11", MUST,
            "tags on messages after READY; a wrong one ends the channel",
            cm_app_tag),
    CF_TEST("cm.bounds", "4.5", "R-CM-13", MUST,
            "silent and short connectors neither block nor stay", cm_bounds),
    {0},
};
