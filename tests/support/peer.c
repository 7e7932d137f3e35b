/* The test peer (see peer.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "engine/fault.h"
#include "support/peer.h"
#include "support/peer_sec.h"

static const struct mroce_addr peer_engine_addr = {.family = MROCE_AF_INET,
                                                   .ip = {10, 0, 0, 1}};
static const struct mroce_addr peer_self_addr = {.family = MROCE_AF_INET,
                                                 .ip = {10, 0, 0, 2}};

#define DEF(v, d) ((v) ? (v) : (d))

void peer_default_cfg(struct peer_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->mtu = PEER_MTU;
    cfg->cq_depth = 256;
    cfg->attr.n_paths = PEER_PATHS;
    cfg->attr.n_streams = 2;
    cfg->attr.sq_depth = 8;
    cfg->attr.rq_depth = 8;
    cfg->attr.dsn_window = 64;
    cfg->attr.tail_copies = 1; /* one copy per loss unless a test asks */
    cfg->attr.ack_every = 1;   /* an ACK per packet unless a test asks */
}

/* The peer's side of the exchange: mirror the engine unless told. */
static void peer_fill_remote(struct peer *p, const struct peer_cfg *cfg)
{
    struct mroce_conn_params *r = &p->remote;
    *r = cfg->remote;
    r->conn_id = DEF(r->conn_id, PEER_REMOTE_ID);
    if (!r->addr.family)
        r->addr = peer_self_addr;
    r->udp_port = DEF(r->udp_port, MROCE_UDP_PORT);
    r->n_paths = DEF(r->n_paths, p->local.n_paths);
    r->n_streams = DEF(r->n_streams, p->local.n_streams);
    r->mtu = DEF(r->mtu, p->local.mtu);
    r->dsn_window = DEF(r->dsn_window, p->local.dsn_window);
    r->msg_window = DEF(r->msg_window, p->local.msg_window);
    r->max_rd = DEF(r->max_rd, p->local.max_rd);
    /* the peer's own sequence numbers start where it announced (R-CONN-5;
     * 0 unless the test chose others) */
    for (int i = 0; i < 256; i++)
        p->psn[i] = r->init_psn;
    p->dsn = r->init_dsn;
    for (int i = 0; i < PEER_MAX_STREAMS; i++)
        p->msn[i] = r->init_msn;
    p->rx_cum = p->local.init_dsn; /* the engine's first DSN */
}

static void peer_open_ctx(struct peer *p, const struct peer_cfg *cfg)
{
    struct mroce_ctx_attr a = {.deterministic = 1,
                               .seed = 1,
                               .mtu = cfg->mtu,
                               .n_planes = cfg->n_planes,
                               .spray_run = cfg->spray_run,
                               .no_icrc = cfg->no_icrc};
    a.addr = peer_engine_addr;
    a.hooks.rand64 = cfg->rand64;
    a.hooks.ud = cfg->rand_ud;
    a.crypto = cfg->crypto;
    a.src_ports = cfg->src_ports;
    a.n_src_ports = cfg->n_src_ports;
    assert_int_equal(mroce_ctx_open(&a, &p->ctx), 0);
    assert_int_equal(mroce_pd_alloc(p->ctx, &p->pd), 0);
    uint32_t depth = DEF(cfg->cq_depth, 256);
    assert_int_equal(mroce_cq_create(p->ctx, depth, &p->scq), 0);
    assert_int_equal(mroce_cq_create(p->ctx, depth, &p->rcq), 0);
}

static void peer_open_mem(struct peer *p)
{
    p->arena = malloc(PEER_MEM_LEN + 2 * PEER_GUARD);
    assert_non_null(p->arena);
    p->mem = p->arena + PEER_GUARD;
    peer_mem_reset(p);
    unsigned all = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    assert_int_equal(mroce_reg_mr(p->pd, p->mem, PEER_MEM_LEN, all, &p->mr), 0);
    p->rkey = mroce_mr_rkey(p->mr);
    p->va = (uint64_t)(uintptr_t)p->mem;
}

static struct peer *peer_live; /* list of peers not yet freed */

struct peer *peer_new_unconnected(const struct peer_cfg *cfg)
{
    struct peer_cfg def;
    if (!cfg) {
        peer_default_cfg(&def);
        cfg = &def;
    }
    struct peer *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->out = calloc(PEER_OUT_MAX, sizeof(*p->out));
    assert_non_null(p->out);
    p->sent = calloc(256, sizeof(*p->sent));
    assert_non_null(p->sent);
    p->live_next = peer_live;
    peer_live = p;
    p->now = PEER_T0;
    peer_open_ctx(p, cfg);
    p->no_icrc = cfg->no_icrc;
    peer_open_mem(p);
    struct mroce_conn_attr attr = cfg->attr;
    attr.send_cq = p->scq;
    attr.recv_cq = p->rcq;
    assert_int_equal(mroce_conn_create(p->pd, &attr, &p->conn), 0);
    if (cfg->fixed_init)
        assert_int_equal(mroce_conn_set_init_seq(p->conn, cfg->init_psn,
                                                 cfg->init_dsn, cfg->init_msn),
                         0);
    mroce_conn_get_params(p->conn, &p->local);
    peer_fill_remote(p, cfg);
    return p;
}

void peer_connect(struct peer *p)
{
    assert_int_equal(mroce_conn_connect(p->conn, &p->remote), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
    p->mtu = p->local.mtu < p->remote.mtu ? p->local.mtu : p->remote.mtu;
}

struct peer *peer_new(const struct peer_cfg *cfg)
{
    struct peer *p = peer_new_unconnected(cfg);
    peer_connect(p);
    return p;
}

void peer_free(struct peer *p)
{
    if (!p)
        return;
    struct peer **pp = &peer_live;
    while (*pp && *pp != p)
        pp = &(*pp)->live_next;
    assert_non_null(*pp); /* freed twice? */
    *pp = p->live_next;
    mroce_ctx_close(p->ctx);
    peer_sec_free(p);
    free(p->arena);
    free(p->out);
    free(p->sent);
    free(p);
}

void peer_free_all(void)
{
    while (peer_live)
        peer_free(peer_live);
}

/* ---- packets from the peer ---- */

struct mroce_pkt_meta peer_meta(const struct peer *p, uint16_t path)
{
    struct mroce_pkt_meta m = {.src = p->remote.addr, .dst = p->local.addr};
    m.src_port = (uint16_t)(50000 + path);
    m.dst_port = p->local.udp_port;
    m.ecn = MROCE_ECN_ECT0;
    return m;
}

struct mroce_hdr peer_hdr(const struct peer *p, uint8_t opcode, uint16_t path,
                          uint32_t psn)
{
    struct mroce_hdr h = {.opcode = opcode, .path = path, .psn = psn};
    h.conn = p->local.conn_id;
    h.ts = (uint32_t)p->now;
    return h;
}

size_t peer_encode(const struct mroce_hdr *h, const void *payload, uint32_t len,
                   uint8_t *buf)
{
    int hl = mroce_wire_write_hdr(h, buf, MROCE_MAX_HDR_LEN);
    assert_true(hl > 0);
    assert_true((size_t)hl + len + MROCE_ICRC_LEN <= PEER_PKT_MAX);
    if (len)
        memcpy(buf + hl, payload, len);
    return mroce_wire_seal(buf, (size_t)hl + len);
}

int peer_rx_meta(struct peer *p, const struct mroce_pkt_meta *m,
                 const uint8_t *buf, size_t len)
{
    return mroce_ctx_rx(p->ctx, p->now, m, buf, len);
}

int peer_rx_raw(struct peer *p, const uint8_t *buf, size_t len)
{
    struct mroce_pkt_meta m = peer_meta(p, 0);
    return peer_rx_meta(p, &m, buf, len);
}

int peer_feed(struct peer *p, const struct mroce_hdr *h, const void *payload,
              uint32_t len)
{
    static uint8_t buf[PEER_PKT_MAX];
    size_t n = p->sec ? peer_sec_seal(p->sec, h, payload, len, buf)
                      : peer_encode(h, payload, len, buf);
    struct mroce_pkt_meta m = peer_meta(p, h->path);
    return peer_rx_meta(p, &m, buf, n);
}

int peer_write(struct peer *p, uint16_t path, uint32_t psn, uint32_t dsn,
               uint16_t stream, uint32_t msn, uint64_t va, uint32_t rkey,
               uint32_t offset, uint32_t msg_len, const void *payload,
               uint32_t len)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, path, psn);
    h.dsn = dsn;
    h.stream = stream;
    h.msn = msn;
    h.va = va;
    h.rkey = rkey;
    h.offset = offset;
    h.msg_len = msg_len;
    return peer_feed(p, &h, payload, len);
}

int peer_send(struct peer *p, uint16_t path, uint32_t psn, uint32_t dsn,
              uint16_t stream, uint32_t msn, uint32_t ssn, uint32_t offset,
              uint32_t msg_len, const void *payload, uint32_t len)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_SEND, path, psn);
    h.dsn = dsn;
    h.stream = stream;
    h.msn = msn;
    h.ssn = ssn;
    h.offset = offset;
    h.msg_len = msg_len;
    return peer_feed(p, &h, payload, len);
}

static bool peer_is_seq(uint8_t op)
{
    return op <= MROCE_OP_READ_RESP || op == MROCE_OP_PROBE;
}

/* The ts the engine sent (path, psn) with, as a true receiver echoes it
 * (R-ACK-2), so that the ACK checks (R-VAL-1) and gives a true RTT
 * sample; the clock if the peer never saw that PSN. */
static uint32_t peer_echo(const struct peer *p, uint16_t path, uint32_t psn)
{
    const struct peer_sent *e = &p->sent[path][psn & 255];
    return e->any && e->psn == psn ? e->ts : (uint32_t)p->now;
}

uint32_t peer_sent_ts(const struct peer *p, uint16_t path, uint32_t psn)
{
    return peer_echo(p, path, psn);
}

int peer_ack(struct peer *p, uint16_t path, uint32_t sack_high,
             uint32_t dsn_cum, const uint32_t *psns, int n)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_ACK, path, 0);
    h.sack_high = sack_high;
    h.dsn_cum = dsn_cum;
    h.echo_ts = peer_echo(p, path, sack_high);
    for (int i = 0; i < n; i++) {
        uint32_t back = sack_high - psns[i];
        assert_true(back < MROCE_SACK_BITS);
        mroce_sack_set(h.sack, back);
    }
    return peer_feed(p, &h, NULL, 0);
}

int peer_ack_range(struct peer *p, uint16_t path, uint32_t lo,
                   uint32_t sack_high, uint32_t dsn_cum)
{
    uint32_t psns[MROCE_SACK_BITS];
    int n = 0;
    for (uint32_t psn = lo; psn != sack_high + 1; psn++) {
        assert_true(n < MROCE_SACK_BITS);
        psns[n++] = psn;
    }
    return peer_ack(p, path, sack_high, dsn_cum, psns, n);
}

int peer_nak(struct peer *p, const struct mroce_hdr *data, uint8_t code,
             uint32_t info)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_NACK, data->path, data->psn);
    h.dsn = data->dsn;
    h.stream = data->stream;
    h.msn = data->msn;
    h.nak_code = code;
    h.nak_info = info;
    return peer_feed(p, &h, NULL, 0);
}

/* ---- what the engine emits ---- */

static bool peer_addr_eq(const struct mroce_addr *a, const struct mroce_addr *b)
{
    return a->family == b->family && memcmp(a->ip, b->ip, 16) == 0;
}

static void peer_check_out(const struct peer *p, struct peer_out *o)
{
    assert_true(o->len <= mroce_ctx_max_pkt(p->ctx));
    if (p->sec) /* authenticates and decrypts it in place */
        assert_int_equal(peer_sec_open(p->sec, o->buf, o->len), 0);
    assert_int_equal(p->no_icrc ? mroce_wire_decode_nocrc(o->buf, o->len, &o->h)
                                : mroce_wire_decode(o->buf, o->len, &o->h),
                     0);
    assert_true(peer_addr_eq(&o->meta.src, &p->local.addr));
    assert_true(peer_addr_eq(&o->meta.dst, &p->remote.addr));
    assert_int_equal(o->meta.dst_port, p->remote.udp_port);
    assert_int_equal(o->meta.ecn, MROCE_ECN_ECT0);
    assert_int_equal(o->h.conn, p->remote.conn_id);
}

int peer_drain(struct peer *p, struct mroce_hdr *out, int max)
{
    p->n_out = 0;
    for (;;) {
        struct peer_out *o = &p->out[p->n_out];
        int n = mroce_ctx_tx(p->ctx, p->now, o->buf, sizeof(o->buf), &o->meta);
        assert_true(n >= 0);
        if (!n)
            break;
        assert_true(p->n_out < PEER_OUT_MAX - 1); /* never emits forever */
        o->len = (size_t)n;
        peer_check_out(p, o);
        if (peer_is_seq(o->h.opcode) && o->h.path < 256)
            p->sent[o->h.path][o->h.psn & 255] =
                (struct peer_sent){.psn = o->h.psn, .ts = o->h.ts, .any = true};
        if (out && p->n_out < max)
            out[p->n_out] = o->h;
        p->n_out++;
    }
    return p->n_out;
}

int peer_count(const struct peer *p, uint8_t opcode)
{
    int n = 0;
    for (int i = 0; i < p->n_out; i++)
        n += p->out[i].h.opcode == opcode;
    return n;
}

const struct peer_out *peer_find(const struct peer *p, uint8_t opcode, int i)
{
    for (int k = 0; k < p->n_out; k++)
        if (p->out[k].h.opcode == opcode && i-- == 0)
            return &p->out[k];
    return NULL;
}

/* Mirror of a receiver's path bitmap: bit i = PSN high - i. */
static void peer_rx_record(struct peer *p, uint16_t path, uint32_t psn)
{
    uint64_t *b = p->rx_bits[path];
    if (!p->rx_any[path] || (int32_t)(psn - p->rx_high[path]) > 0) {
        uint32_t d = p->rx_any[path] ? psn - p->rx_high[path] : 256;
        uint64_t old[4];
        memcpy(old, b, sizeof(old));
        memset(b, 0, 4 * sizeof(uint64_t));
        for (uint32_t i = 0; i + d < MROCE_SACK_BITS; i++)
            if (mroce_sack_test(old, i))
                mroce_sack_set(b, i + d);
        p->rx_any[path] = true;
        p->rx_high[path] = psn;
    }
    uint32_t back = p->rx_high[path] - psn;
    if (back < MROCE_SACK_BITS)
        mroce_sack_set(b, back);
}

static void peer_rx_dsn(struct peer *p, uint32_t dsn)
{
    if ((int32_t)(dsn - p->rx_cum) < 0)
        return;
    p->rx_seen[dsn % 4096] = 1;
    while (p->rx_seen[p->rx_cum % 4096])
        p->rx_seen[p->rx_cum++ % 4096] = 0;
}

static bool peer_is_data(uint8_t op)
{
    return op >= MROCE_OP_WRITE && op <= MROCE_OP_READ_RESP;
}

void peer_ack_all(struct peer *p)
{
    bool touched[256] = {false};
    uint32_t cum0 = p->rx_cum;
    int last = -1;
    for (int i = 0; i < p->n_out; i++) {
        const struct mroce_hdr *h = &p->out[i].h;
        if (!peer_is_data(h->opcode) && h->opcode != MROCE_OP_PROBE)
            continue;
        peer_rx_record(p, h->path, h->psn);
        if (peer_is_data(h->opcode))
            peer_rx_dsn(p, h->dsn);
        touched[h->path] = true;
        last = h->path > last ? h->path : last;
    }
    /* each path's own SACK resolves its packets (with an RTT sample)
     * before the last ACK's dsn_cum covers everything (R-ACK-100) */
    for (uint16_t path = 0; path < 256; path++) {
        if (!touched[path])
            continue;
        struct mroce_hdr h = peer_hdr(p, MROCE_OP_ACK, path, 0);
        h.sack_high = p->rx_high[path];
        h.dsn_cum = path == last ? p->rx_cum : cum0;
        h.echo_ts = peer_echo(p, path, h.sack_high);
        memcpy(h.sack, p->rx_bits[path], sizeof(h.sack));
        assert_int_equal(peer_feed(p, &h, NULL, 0), 0);
    }
}

int peer_prove(struct peer *p)
{
    assert_non_null(peer_find(p, MROCE_OP_PROBE, 0));
    peer_ack_all(p);
    return peer_drain(p, NULL, 0);
}

void peer_post_recv(struct peer *p, uint16_t stream, uint64_t wr_id,
                    uint32_t off, uint32_t len)
{
    struct mroce_recv_wr r = {.wr_id = wr_id, .stream = stream};
    r.sge.addr = p->va + off;
    r.sge.length = len;
    r.sge.lkey = mroce_mr_lkey(p->mr);
    assert_int_equal(mroce_post_recv(p->conn, &r), 0);
}

int peer_post(struct peer *p, uint8_t op, uint16_t stream, uint64_t wr_id,
              uint32_t off, uint32_t len)
{
    struct mroce_send_wr w = {.wr_id = wr_id, .stream = stream};
    w.sge.addr = p->va + off;
    w.sge.length = len;
    w.sge.lkey = mroce_mr_lkey(p->mr);
    w.remote_addr = 0x100000000ull + off; /* the peer's memory: any value */
    w.rkey = 0x5EED;
    w.imm = (uint32_t)wr_id;
    switch (op) {
    case MROCE_OP_WRITE:
        return mroce_post_write(p->conn, &w);
    case MROCE_OP_WRITE_IMM:
        return mroce_post_write_imm(p->conn, &w);
    case MROCE_OP_SEND:
        return mroce_post_send(p->conn, &w);
    case MROCE_OP_SEND_IMM:
        return mroce_post_send_imm(p->conn, &w);
    default:
        return mroce_post_read(p->conn, &w);
    }
}

/* ---- time ---- */

void peer_advance(struct peer *p, uint64_t ns)
{
    p->now += ns;
}

bool peer_fire(struct peer *p)
{
    uint64_t t = mroce_ctx_next_expiry(p->ctx);
    if (t == UINT64_MAX)
        return false;
    if (t > p->now)
        p->now = t;
    mroce_ctx_on_expiry(p->ctx, p->now);
    return true;
}

int peer_fire_tx(struct peer *p, int max_rounds)
{
    for (int i = 0; i < max_rounds; i++) {
        if (!peer_fire(p))
            return 0;
        int n = peer_drain(p, NULL, 0);
        if (n)
            return n;
    }
    return 0;
}

/* ---- state ---- */

int peer_poll(struct mroce_cq *cq, struct mroce_wc *wc, int max)
{
    int n = mroce_poll_cq(cq, max, wc);
    assert_true(n >= 0 && n <= max);
    return n;
}

uint64_t peer_drops(const struct peer *p)
{
    struct mroce_ctx_counters x = peer_ctx_cnt(p);
    struct mroce_conn_counters c = peer_cnt(p);
    return x.drop_truncated + x.drop_bad_version + x.drop_bad_opcode +
           x.drop_bad_crc + x.drop_bad_payload + x.drop_unknown_conn +
           x.drop_bad_src + c.drop_bad_path + c.drop_dsn_window +
           c.drop_msn_window + c.drop_bad_key + c.drop_bad_bounds +
           c.drop_bad_access + c.drop_bad_msg + c.drop_state + c.drop_stale +
           c.drop_bad_ack + c.drop_psn_window + c.drop_bad_close +
           c.drop_bad_tag + c.drop_replay + c.drop_sec_mode;
}

size_t peer_mem_dirty(const struct peer *p)
{
    size_t n = 0;
    for (size_t i = 0; i < PEER_MEM_LEN + 2 * PEER_GUARD; i++)
        n += p->arena[i] != PEER_FILL;
    return n;
}

void peer_mem_reset(struct peer *p)
{
    memset(p->arena, PEER_FILL, PEER_MEM_LEN + 2 * PEER_GUARD);
}

void peer_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
        if (buf[i] == PEER_FILL)
            buf[i] ^= 0xFF; /* never the fill, so placement is visible */
    }
}

struct mroce_path_info peer_path(const struct peer *p, uint16_t path)
{
    struct mroce_path_info info;
    assert_int_equal(mroce_path_query(p->conn, path, &info), 0);
    return info;
}

struct mroce_conn_counters peer_cnt(const struct peer *p)
{
    struct mroce_conn_counters c;
    mroce_conn_get_counters(p->conn, &c);
    return c;
}

struct mroce_ctx_counters peer_ctx_cnt(const struct peer *p)
{
    struct mroce_ctx_counters c;
    mroce_ctx_get_counters(p->ctx, &c);
    return c;
}

void peer_check_alive(struct peer *p)
{
    uint8_t data[64];
    peer_pattern(data, sizeof(data), p->dsn + 7);
    uint32_t psn = p->psn[0]++, dsn = p->dsn++, msn = p->msn[0]++;
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 0, psn);
    h.flags = MROCE_HF_ACKREQ;
    h.dsn = dsn;
    h.msn = msn;
    h.va = p->va;
    h.rkey = p->rkey;
    h.msg_len = sizeof(data);
    assert_int_equal(peer_feed(p, &h, data, sizeof(data)), 0);
    assert_memory_equal(p->mem, data, sizeof(data));
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct peer_out *a = peer_find(p, MROCE_OP_ACK, 0);
    assert_non_null(a);
    assert_int_equal(a->h.path, 0);
    assert_int_equal(a->h.sack_high, psn);
    assert_int_equal(a->h.dsn_cum, dsn + 1);
    assert_true(mroce_sack_test(a->h.sack, 0));
    peer_mem_reset(p);
}
