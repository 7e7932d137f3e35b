/* The suite's endpoint: the remote end of the IUT's connection. It keeps
 * the receiver state of the spec (R-SACK-4, R-DSN-2) for what the IUT
 * sends, answers it automatically like a conforming peer (ACK every
 * recorded packet, place WRITEs and SENDs in its own memory, answer READs,
 * answer CLOSE) unless the test turns that off or tells it to treat a
 * packet as lost, and logs every datagram for the test to inspect. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform/cf.h"
#include "wire/crc32c.h"

#define PEER_READ_AREA (CF_MEM_LEN / 2) /* READ responses land here */

struct cf_peer *cf_peer_new(struct cf_t *t)
{
    struct cf_peer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->mem = calloc(1, CF_MEM_LEN);
    p->mon.dsn = calloc(CF_MON_DSNS, sizeof(*p->mon.dsn));
    p->mon.new_dsn = calloc(CF_MON_DSNS, 1);
    p->mon.csn_seen = calloc(CF_MON_DSNS, 1);
    if (!p->mem || !p->mon.dsn || !p->mon.new_dsn || !p->mon.csn_seen ||
        cf_sock_open(&p->s, t->ip, 0) < 0) {
        cf_peer_free(p);
        return NULL;
    }
    p->s2.fd = -1;
    p->auto_ack = p->auto_place = p->auto_close_ack = p->auto_read = true;
    p->rnr_info = 100;
    p->mem_va = 0x00005a0000000000ull;
    p->rd_off = PEER_READ_AREA;
    return p;
}

void cf_peer_free(struct cf_peer *p)
{
    if (!p)
        return;
    cf_sock_close(&p->s);
    cf_sock_close(&p->s2);
    for (int i = 0; i < p->n_log; i++) {
        free(p->log[i]->buf);
        free(p->log[i]);
    }
    free(p->log);
    free(p->mem);
    free(p->acc);
    free(p->mon.dsn);
    free(p->mon.new_dsn);
    free(p->mon.csn_seen);
    free(p);
}

/* ---- the receiver's path state (R-SACK-5, R-SACK-7) ---- */

static void peer_shift(uint64_t b[4], uint32_t d)
{
    for (uint32_t i = 255; i != UINT32_MAX; i--) {
        bool v = i >= d && mroce_sack_test(b, i - d);
        if (v)
            b[i >> 6] |= (uint64_t)1 << (63 - (i & 63));
        else
            b[i >> 6] &= ~((uint64_t)1 << (63 - (i & 63)));
    }
}

/* R-VAL-2: whether a packet of this kind may be recorded at psn. */
static bool peer_may_record(const struct cf_rxpath *r, uint32_t psn, int kind)
{
    uint32_t high = r->any ? r->high : r->init_psn - 1;
    uint32_t d = psn - high;
    if (kind == CF_REC_PROBE)
        return d == 1;
    if (kind == CF_REC_DUP)
        return d <= 1024 || high - psn <= 255;
    return true;
}

/* R-SACK-5 as written: high starts at init_psn - 1 (R-SACK-4), with the
 * recording windows of R-VAL-2 for duplicates and PROBEs. */
int cf_rx_model(struct cf_rxpath *r, uint32_t psn, uint32_t ts, uint8_t ecn,
                int kind)
{
    int res;
    if (!peer_may_record(r, psn, kind))
        return CF_RX_NOT_RECORDED;
    if (!r->any) {
        r->any = true;
        r->high = r->init_psn - 1;
    }
    uint32_t d = psn - r->high;
    if (d > 0 && d < 0x80000000u) {
        if (d >= 256)
            memset(r->bits, 0, sizeof(r->bits));
        else
            peer_shift(r->bits, d);
        mroce_sack_set(r->bits, 0);
        r->high = psn;
        r->echo = ts;
        res = d == 1 ? CF_RX_IN_ORDER : CF_RX_GAP;
    } else {
        uint32_t i = r->high - psn;
        if (i > 255)
            res = CF_RX_TOO_OLD;
        else if (mroce_sack_test(r->bits, i))
            res = CF_RX_DUP_PSN;
        else
            res = CF_RX_LATE;
        if (i <= 255)
            mroce_sack_set(r->bits, i);
    }
    r->rx_count++;
    if (ecn == 3)
        r->ce_count++;
    return res;
}

static int peer_record(struct cf_peer *p, const struct cf_pkt *pk, int kind)
{
    return cf_rx_model(&p->rx[pk->h.path], pk->h.psn, pk->h.ts, pk->ecn, kind);
}

void cf_ack_fill(struct cf_t *t, uint16_t path, struct mroce_hdr *h)
{
    struct cf_peer *p = t->p;
    const struct cf_rxpath *r = &p->rx[path];
    *h = cf_hdr(t, MROCE_OP_ACK, path);
    h->sack_high = r->any ? r->high : r->init_psn - 1;
    h->psn = h->sack_high; /* R-VAL-4: no PROBE answered */
    memcpy(h->sack, r->bits, sizeof(h->sack));
    h->dsn_cum = p->dsn_cum;
    h->echo_ts = r->echo;
    h->rate_mbps = p->rate_mbps;
    h->ce_count = r->ce_count;
    h->rx_count = r->rx_count;
}

void cf_send_ack(struct cf_t *t, uint16_t path)
{
    struct mroce_hdr h;
    cf_ack_fill(t, path, &h);
    cf_send(t, &h, NULL, 0);
}

/* R-PATH-9, R-VAL-4: the answer to a PROBE names it, recorded or not. */
void cf_send_probe_ack(struct cf_t *t, uint16_t path, uint32_t probe_psn)
{
    struct mroce_hdr h;
    cf_ack_fill(t, path, &h);
    h.psn = probe_psn;
    cf_send(t, &h, NULL, 0);
}

/* ---- the DSN window (R-DSN-3, R-DSN-4) ---- */

enum { DSN_NEW, DSN_DUP, DSN_OUT };

static int peer_dsn_class(const struct cf_peer *p, uint32_t dsn)
{
    uint32_t k = dsn - p->dsn_cum;
    if (k >= 0x80000000u)
        return DSN_DUP;
    if (k >= p->dsn_window)
        return DSN_OUT;
    return p->acc[dsn % p->dsn_window] ? DSN_DUP : DSN_NEW;
}

static void peer_dsn_mark(struct cf_peer *p, uint32_t dsn)
{
    p->acc[dsn % p->dsn_window] = 1;
    while (p->acc[p->dsn_cum % p->dsn_window]) {
        p->acc[p->dsn_cum % p->dsn_window] = 0;
        p->dsn_cum++;
    }
}

/* ---- placement of the IUT's data in the suite's memory ---- */

static void peer_nak(struct cf_t *t, const struct cf_pkt *pk, uint8_t code,
                     uint32_t info)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_NACK, pk->h.path);
    h.psn = pk->h.psn;
    h.dsn = pk->h.dsn;
    h.stream = pk->h.stream;
    h.msn = pk->h.msn;
    h.nak_code = code;
    h.nak_info = info;
    cf_send(t, &h, NULL, 0);
}

static bool peer_in_mem(const struct cf_peer *p, uint64_t va, uint64_t len,
                        uint32_t rkey)
{
    return rkey == p->mem_rkey && va >= p->mem_va &&
           va - p->mem_va <= CF_MEM_LEN && len <= CF_MEM_LEN - (va - p->mem_va);
}

static struct cf_inmsg *peer_inmsg(struct cf_peer *p, const struct mroce_hdr *h)
{
    if (h->stream >= CF_MAX_STREAMS)
        return NULL;
    struct cf_inmsg *m = &p->in[h->stream][h->msn % CF_IN_MSGS];
    if (!m->used || m->msn != h->msn) {
        uint32_t n = h->opcode == MROCE_OP_READ_REQ || !h->msg_len
                         ? 1
                         : (h->msg_len - 1) / p->mtu + 1;
        *m = (struct cf_inmsg){.used = true,
                               .op = h->opcode,
                               .msn = h->msn,
                               .len = h->msg_len,
                               .npkts = n,
                               .ssn = h->ssn,
                               .imm = h->imm,
                               .va = h->va,
                               .rkey = h->rkey};
    }
    return m;
}

static int peer_place_send(struct cf_t *t, const struct cf_pkt *pk)
{
    struct cf_peer *p = t->p;
    const struct mroce_hdr *h = &pk->h;
    if (h->stream >= CF_MAX_STREAMS || h->ssn >= CF_RECV_SLOTS ||
        !p->recv[h->stream][h->ssn].posted) {
        peer_nak(t, pk, MROCE_NAK_RNR, p->rnr_info);
        return -1;
    }
    struct cf_recv *r = &p->recv[h->stream][h->ssn];
    if (h->msg_len > r->len) {
        peer_nak(t, pk, MROCE_NAK_INVALID_REQUEST, 0);
        return -1;
    }
    if (h->payload_len)
        memcpy(p->mem + r->off + h->offset, h->payload, h->payload_len);
    r->npkts = !h->msg_len ? 1 : (h->msg_len - 1) / p->mtu + 1;
    r->byte_len = h->msg_len;
    r->imm = h->imm;
    r->has_imm = h->opcode == MROCE_OP_SEND_IMM;
    r->done = ++r->got >= r->npkts;
    return 0;
}

static void peer_read_resp_tx(struct cf_t *t, const struct mroce_hdr *req)
{
    struct cf_peer *p = t->p;
    uint32_t n = req->msg_len ? (req->msg_len - 1) / p->mtu + 1 : 1;
    for (uint32_t i = 0; i < n; i++) {
        uint16_t path = (uint16_t)(p->rr_path++ % p->n_paths);
        struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_READ_RESP, path);
        uint32_t off = i * p->mtu;
        uint32_t len =
            req->msg_len - off < p->mtu ? req->msg_len - off : p->mtu;
        h.stream = req->stream;
        h.msn = req->msn;
        h.msg_len = req->msg_len;
        h.offset = off;
        h.flags = i + 1 == n ? MROCE_HF_ACKREQ : 0;
        const uint8_t *src =
            req->msg_len ? p->mem + (req->va - p->mem_va) + off : NULL;
        cf_send(t, &h, src, req->msg_len ? len : 0);
    }
}

static int peer_place_read_resp(struct cf_t *t, const struct cf_pkt *pk)
{
    struct cf_peer *p = t->p;
    const struct mroce_hdr *h = &pk->h;
    for (int i = 0; i < 64; i++) {
        struct cf_rd *r = &p->rd[i];
        if (!r->used || r->stream != h->stream || r->msn != h->msn)
            continue;
        if (h->msg_len != r->len || h->offset + h->payload_len > r->len)
            break;
        memcpy(p->mem + r->off + h->offset, h->payload, h->payload_len);
        r->got++;
        return 0;
    }
    peer_nak(t, pk, MROCE_NAK_INVALID_REQUEST, 0);
    return -1;
}

/* R-RX-3 step 16 as a plain receiver: 0 accepted, -1 refused (NACKed). */
static int peer_place(struct cf_t *t, const struct cf_pkt *pk)
{
    struct cf_peer *p = t->p;
    const struct mroce_hdr *h = &pk->h;
    switch (h->opcode) {
    case MROCE_OP_WRITE_IMM:
        if (h->stream >= CF_MAX_STREAMS || h->ssn >= CF_RECV_SLOTS ||
            !p->recv[h->stream][h->ssn].posted) {
            peer_nak(t, pk, MROCE_NAK_RNR, p->rnr_info); /* R-MSG-8 */
            return -1;
        }
        /* fall through */
    case MROCE_OP_WRITE:
        if (h->msg_len &&
            !peer_in_mem(p, h->va + h->offset, h->payload_len, h->rkey)) {
            peer_nak(t, pk, MROCE_NAK_REMOTE_ACCESS, 0);
            return -1;
        }
        if (h->payload_len)
            memcpy(p->mem + (h->va - p->mem_va) + h->offset, h->payload,
                   h->payload_len);
        return 0;
    case MROCE_OP_SEND:
    case MROCE_OP_SEND_IMM:
        return peer_place_send(t, pk);
    case MROCE_OP_READ_REQ:
        if (h->msg_len && !peer_in_mem(p, h->va, h->msg_len, h->rkey)) {
            peer_nak(t, pk, MROCE_NAK_REMOTE_ACCESS, 0);
            return -1;
        }
        return 0;
    default:
        return peer_place_read_resp(t, pk);
    }
}

static void peer_data(struct cf_t *t, struct cf_pkt *pk)
{
    struct cf_peer *p = t->p;
    const struct mroce_hdr *h = &pk->h;
    int cls = peer_dsn_class(p, h->dsn);
    if (cls == DSN_OUT)
        return; /* R-DSN-6: not recorded (the monitor notes R-DSN-7) */
    if (cls == DSN_NEW && p->auto_place && peer_place(t, pk) < 0)
        return; /* refused: not recorded (R-SACK-6) */
    if (cls == DSN_NEW) {
        peer_dsn_mark(p, h->dsn);
        struct cf_inmsg *m =
            h->opcode != MROCE_OP_READ_RESP ? peer_inmsg(p, h) : NULL;
        if (m && ++m->got >= m->npkts)
            m->done = true;
    }
    peer_record(p, pk, cls == DSN_NEW ? CF_REC_DATA : CF_REC_DUP);
    if (p->auto_ack)
        cf_send_ack(t, h->path);
    if (cls == DSN_NEW && h->opcode == MROCE_OP_READ_REQ && p->auto_read &&
        p->auto_place)
        peer_read_resp_tx(t, h);
}

static void peer_ack_rx(struct cf_peer *p, const struct mroce_hdr *h)
{
    if (!p->got_ack || (int32_t)(h->dsn_cum - p->iut_cum) > 0)
        p->iut_cum = h->dsn_cum;
    p->got_ack = true;
}

void cf_trace_pkt(const char *dir, const struct mroce_hdr *h, size_t len,
                  uint16_t port)
{
    static uint64_t t0;
    uint64_t now = cf_now();
    if (!t0)
        t0 = now;
    fprintf(stderr,
            "%9.3f %s %-9s %4zuB port %5u path %u psn %u flags %x dsn %u "
            "st %u msn %u len %u off %u",
            (double)(now - t0) / 1e6, dir, mroce_wire_op_name(h->opcode), len,
            port, h->path, h->psn, h->flags, h->dsn, h->stream, h->msn,
            h->msg_len, h->offset);
    if (h->opcode == MROCE_OP_ACK || h->opcode == MROCE_OP_ACKM)
        fprintf(stderr, " high %u cum %u rx %u", h->sack_high, h->dsn_cum,
                h->rx_count);
    if (h->opcode == MROCE_OP_NACK)
        fprintf(stderr, " code %u info %u", h->nak_code, h->nak_info);
    fprintf(stderr, "\n");
}

/* The automatic rules for one packet of the IUT. */
static void peer_handle(struct cf_t *t, struct cf_pkt *pk)
{
    struct cf_peer *p = t->p;
    if (t->trace)
        cf_trace_pkt(pk->derr ? "<?" : "<", &pk->h, pk->len, pk->sport);
    cf_mon_packet(t, pk);
    if (pk->derr || pk->h.conn != p->my_id || pk->h.path >= p->n_paths)
        return;
    uint8_t op = pk->h.opcode;
    bool recorded = (op >= MROCE_OP_WRITE && op <= MROCE_OP_READ_RESP) ||
                    op == MROCE_OP_PROBE;
    if (recorded && p->drop && p->drop(t, pk, p->drop_ud)) {
        pk->lost = true;
        return;
    }
    if (op >= MROCE_OP_WRITE && op <= MROCE_OP_READ_RESP) {
        peer_data(t, pk);
    } else if (op == MROCE_OP_PROBE) {
        peer_record(p, pk, CF_REC_PROBE);
        if (p->auto_ack)
            cf_send_probe_ack(t, pk->h.path, pk->h.psn);
    } else if (op == MROCE_OP_CLOSE && p->auto_close_ack) {
        cf_send(t,
                &(struct mroce_hdr){.opcode = MROCE_OP_CLOSE_ACK,
                                    .path = pk->h.path,
                                    .conn = p->iut_id,
                                    .psn = p->dsn, /* R-VAL-5 */
                                    .ts = (uint32_t)cf_now()},
                NULL, 0);
    } else if (op == MROCE_OP_ACK || op == MROCE_OP_ACKM) {
        peer_ack_rx(p, &pk->h); /* dsn_cum is the connection's */
    }
}

/* ---- receiving ---- */

static struct cf_pkt *peer_log_add(struct cf_peer *p, const uint8_t *buf,
                                   size_t n, const struct cf_pkt *meta)
{
    struct cf_pkt *pk = malloc(sizeof(*pk));
    uint8_t *copy = malloc(n ? n : 1);
    if (p->n_log == p->cap_log) {
        int cap = p->cap_log ? 2 * p->cap_log : 256;
        struct cf_pkt **l = realloc(p->log, (size_t)cap * sizeof(*l));
        if (l) {
            p->log = l;
            p->cap_log = cap;
        }
    }
    if (!pk || !copy || p->n_log == p->cap_log) {
        free(pk);
        free(copy);
        return NULL;
    }
    *pk = *meta;
    pk->wire_len = n;
    pk->flags0 = n ? buf[0] : 0;
    if (p->aead.mode && n && (buf[0] & 0x2)) { /* sealed: open it */
        uint8_t *plain = malloc(n);
        int m = plain ? cf_aead_open(&p->aead, buf, n, plain) : -2;
        if (m > 0) {
            pk->sealed = true;
            if (plain[1] >= MROCE_OP_WRITE && plain[1] <= MROCE_OP_READ_RESP)
                pk->prot = plain[22];
            plain[22] = 0; /* the plain packet's reserved byte */
            mroce_wire_seal(plain, (size_t)m - 4);
            free(copy);
            copy = plain;
            n = (size_t)m;
        } else {
            free(plain);
            memcpy(copy, buf, n);
            pk->buf = copy;
            pk->len = n;
            pk->derr = CF_DERR_TAG;
            memset(&pk->h, 0, sizeof(pk->h));
            p->log[p->n_log++] = pk;
            return pk;
        }
        pk->buf = copy;
        pk->len = n;
        pk->derr = mroce_wire_decode(copy, n, &pk->h);
        p->log[p->n_log++] = pk;
        return pk;
    }
    memcpy(copy, buf, n);
    pk->buf = copy;
    pk->len = n;
    pk->derr = mroce_wire_decode(copy, n, &pk->h);
    p->log[p->n_log++] = pk;
    return pk;
}

/* One datagram from either socket within ms, or NULL. */
static struct cf_pkt *peer_recv(struct cf_t *t, int ms)
{
    struct cf_peer *p = t->p;
    static uint8_t buf[CF_PKT_MAX];
    struct pollfd pf[2] = {{.fd = p->s.fd, .events = POLLIN},
                           {.fd = p->s2.fd, .events = POLLIN}};
    if (poll(pf, p->s2.fd >= 0 ? 2 : 1, ms) <= 0)
        return NULL;
    int which = (pf[0].revents & POLLIN) ? 0 : 1;
    struct cf_sock *s = which ? &p->s2 : &p->s;
    struct cf_pkt meta = {.sock = which};
    uint64_t drops = s->kernel_drops;
    int n = cf_sock_recv(s, buf, sizeof(buf), &meta, 0);
    if (n < 0)
        return NULL;
    if (s->kernel_drops != drops)
        p->mon.unreliable = true;
    meta.t = cf_now();
    return peer_log_add(p, buf, (size_t)n, &meta);
}

const struct cf_pkt *cf_next(struct cf_t *t, int ms)
{
    if (ms < 0) /* never poll without a timeout */
        ms = 0;
    uint64_t end = cf_now() + (uint64_t)ms * 1000000ull;
    for (;;) {
        if (cf_timed_out)
            cf_abort(t, "timed out");
        uint64_t now = cf_now();
        int left = now >= end ? 0 : (int)((end - now + 999999) / 1000000);
        struct cf_pkt *pk = peer_recv(t, left);
        if (pk) {
            peer_handle(t, pk);
            return pk;
        }
        if (cf_now() >= end)
            return NULL;
    }
}

const struct cf_pkt *cf_wait(struct cf_t *t, cf_match_fn m, const void *arg,
                             int ms)
{
    uint64_t end = cf_now() + (uint64_t)ms * 1000000ull;
    for (;;) {
        uint64_t now = cf_now();
        if (now >= end)
            return NULL;
        const struct cf_pkt *pk =
            cf_next(t, (int)((end - now + 999999) / 1000000));
        if (pk && m(pk, arg))
            return pk;
    }
}

int cf_pump(struct cf_t *t, int ms)
{
    int n = 0;
    uint64_t end = cf_now() + (uint64_t)ms * 1000000ull;
    for (uint64_t now; (now = cf_now()) < end;)
        n += cf_next(t, (int)((end - now + 999999) / 1000000)) != NULL;
    return n;
}

struct barrier_arg {
    uint16_t path;
    uint32_t psn;
};

/* R-PATH-9, R-VAL-4: the answer to the PROBE names it in MTH psn (the
 * PROBE is recorded only if it is the path's next PSN, R-VAL-2). */
static bool peer_is_barrier_ack(const struct cf_pkt *pk, const void *arg)
{
    const struct barrier_arg *b = arg;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK && pk->h.path == b->path &&
           pk->h.psn == b->psn;
}

bool cf_barrier(struct cf_t *t, uint16_t path, int ms)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, path);
    h.psn = cf_next_psn(t, path);
    h.flags = MROCE_HF_ACKREQ;
    struct barrier_arg b = {path, h.psn};
    cf_send(t, &h, NULL, 0);
    return cf_wait(t, peer_is_barrier_ack, &b, ms) != NULL;
}

/* ---- looking at the log ---- */

int cf_count(const struct cf_t *t, int from, uint8_t opcode)
{
    int n = 0;
    for (int i = from; i < t->p->n_log; i++)
        n += !t->p->log[i]->derr && t->p->log[i]->h.opcode == opcode;
    return n;
}

const struct cf_pkt *cf_find(const struct cf_t *t, int from, uint8_t opcode,
                             int nth)
{
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!pk->derr && pk->h.opcode == opcode && nth-- == 0)
            return pk;
    }
    return NULL;
}

bool cf_is_op(const struct cf_pkt *pk, const void *opcode)
{
    return !pk->derr && (!opcode || pk->h.opcode == *(const uint8_t *)opcode);
}

bool cf_is_data(const struct cf_pkt *pk, const void *unused)
{
    (void)unused;
    return !pk->derr && pk->h.opcode >= MROCE_OP_WRITE &&
           pk->h.opcode <= MROCE_OP_READ_RESP;
}

bool cf_is_ack_for(const struct cf_pkt *pk, const void *path16)
{
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK &&
           (!path16 || pk->h.path == *(const uint16_t *)path16);
}

void cf_peer_recv(struct cf_t *t, uint16_t stream, uint32_t ssn, uint32_t len)
{
    struct cf_peer *p = t->p;
    struct cf_recv *r = &p->recv[stream][ssn % CF_RECV_SLOTS];
    /* receives live in the first half of the memory, 64 KiB apart */
    uint32_t slot = (stream * CF_RECV_SLOTS + ssn % CF_RECV_SLOTS) % 32;
    *r = (struct cf_recv){.posted = true, .len = len, .off = slot * 65536u};
}

const struct cf_inmsg *cf_inmsg(struct cf_t *t, uint16_t stream, uint32_t msn)
{
    const struct cf_inmsg *m = &t->p->in[stream][msn % CF_IN_MSGS];
    return m->used && m->msn == msn ? m : NULL;
}
