/* Packets the suite sends: valid ones from the suite's own sequence
 * numbers, and hostile ones (bad ICRC, extra bytes, truncation, patched
 * fields, another source) exactly as a test asks. */
#include <string.h>

#include "conform/cf.h"
#include "wire/be.h"
#include "wire/crc32c.h"

void cf_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 0x9E3779B9u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)(x >> 24);
    }
}

struct mroce_hdr cf_hdr(struct cf_t *t, uint8_t opcode, uint16_t path)
{
    bool close = opcode == MROCE_OP_CLOSE || opcode == MROCE_OP_CLOSE_ACK;
    return (struct mroce_hdr){.opcode = opcode,
                              .path = path,
                              .conn = t->p->iut_id,
                              .psn = close ? t->p->dsn : 0, /* R-VAL-5 */
                              .ts = (uint32_t)cf_now()};
}

uint32_t cf_next_psn(struct cf_t *t, uint16_t path)
{
    return t->p->psn[path]++;
}

uint32_t cf_next_dsn(struct cf_t *t)
{
    return t->p->dsn++;
}

struct mroce_hdr cf_data_hdr(struct cf_t *t, uint8_t opcode, uint16_t path)
{
    struct mroce_hdr h = cf_hdr(t, opcode, path);
    h.psn = cf_next_psn(t, path);
    h.dsn = cf_next_dsn(t);
    return h;
}

/* Headers, payload, extra bytes and ICRC as x asks; the length or -1. */
static int build_pkt(const struct mroce_hdr *h, const void *payload,
                     uint32_t len, const struct cf_tx *x, uint8_t *out,
                     size_t cap, struct cf_aead *aead)
{
    int hl = mroce_wire_write_hdr(h, out, cap);
    if (hl < 0 || (size_t)hl + len + x->extra + 16 > cap)
        return -1;
    size_t n = (size_t)hl;
    if (len)
        memcpy(out + n, payload, len);
    n += len;
    memset(out + n, 0xEE, x->extra);
    n += x->extra;
    if (x->byte0)
        out[0] = x->byte0;
    if (x->patch && !x->no_reseal && x->patch_off + x->patch_len <= n)
        memcpy(out + x->patch_off, x->patch, x->patch_len);
    if (aead && aead->mode && !x->plain) {
        size_t s = cf_aead_seal(aead, out, n, x->prot ? x->prot - 1 : -1);
        if (x->patch && x->no_reseal && x->patch_off + x->patch_len <= s)
            memcpy(out + x->patch_off, x->patch, x->patch_len);
        if (x->bad_crc && s)
            out[s - 1] ^= 0x5A; /* the tag */
        return s ? (int)s : -1;
    }
    uint32_t crc = mroce_crc32c(0, out, n);
    if (x->crc_le) {
        for (int i = 0; i < 4; i++)
            out[n + (size_t)i] = (uint8_t)(crc >> (8 * i));
    } else {
        mroce_be32_put(out + n, crc);
    }
    n += 4;
    if (x->patch && x->no_reseal && x->patch_off + x->patch_len <= n)
        memcpy(out + x->patch_off, x->patch, x->patch_len);
    if (x->bad_crc)
        out[n - 1] ^= 0x5A;
    return (int)n;
}

int cf_send_raw(struct cf_t *t, const void *buf, size_t len,
                const struct cf_tx *x)
{
    static const struct cf_tx none = {.ecn = 2};
    struct cf_peer *p = t->p;
    if (!x)
        x = &none;
    if (x->trunc > 0 && (size_t)x->trunc < len)
        len = (size_t)x->trunc;
    struct cf_sock *s = x->from_s2 && p->s2.fd >= 0 ? &p->s2 : &p->s;
    p->sent_pkts++;
    return cf_sock_send(s, p->iut_ip, p->iut_port, buf, len, x->ecn);
}

/* What the suite sent on a path, for the monitor's R-ACK-5 check. */
void cf_note_sent(struct cf_peer *p, const struct mroce_hdr *h)
{
    if ((h->opcode == MROCE_OP_ACK || h->opcode == MROCE_OP_ACKM) &&
        h->path < CF_MAX_PATHS &&
        (!p->ack_any[h->path] ||
         (int32_t)(h->sack_high - p->ack_high[h->path]) > 0)) {
        p->ack_high[h->path] = h->sack_high; /* R-VAL-4: a resync target */
        p->ack_any[h->path] = true;
    }
    bool rec =
        (h->opcode >= MROCE_OP_WRITE && h->opcode <= MROCE_OP_READ_RESP) ||
        h->opcode == MROCE_OP_PROBE;
    if (!rec || h->path >= CF_MAX_PATHS)
        return;
    if (h->opcode == MROCE_OP_PROBE)
        p->probe_psn[h->path][p->probe_n[h->path]++ % CF_PROBE_RING] = h->psn;
    if (!p->tx_any[h->path] || (int32_t)(h->psn - p->tx_high[h->path]) > 0)
        p->tx_high[h->path] = h->psn;
    p->tx_any[h->path] = true;
}

bool cf_sent_probe(const struct cf_peer *p, uint16_t path, uint32_t psn)
{
    uint32_t n =
        p->probe_n[path] < CF_PROBE_RING ? p->probe_n[path] : CF_PROBE_RING;
    for (uint32_t i = 0; i < n; i++)
        if (p->probe_psn[path][i] == psn)
            return true;
    return false;
}

int cf_send_x(struct cf_t *t, const struct mroce_hdr *h, const void *payload,
              uint32_t len, const struct cf_tx *x)
{
    static uint8_t buf[CF_PKT_MAX + 256];
    int n = build_pkt(h, payload, len, x, buf, sizeof(buf), &t->p->aead);
    CF_REQUIRE(t, n > 0, "cannot encode opcode 0x%02x", h->opcode);
    cf_note_sent(t->p, h);
    if (t->trace)
        cf_trace_pkt(">", h, (size_t)n, 0);
    cf_send_raw(t, buf, (size_t)n, x);
    return x->trunc > 0 && x->trunc < n ? x->trunc : n;
}

int cf_send(struct cf_t *t, const struct mroce_hdr *h, const void *payload,
            uint32_t len)
{
    const struct cf_tx x = {.ecn = 2}; /* R-ENC-6: ECT(0) */
    return cf_send_x(t, h, payload, len, &x);
}

/* ---- whole messages (R-MSG-1, R-MSG-7, R-ORD-1) ---- */

static bool build_consumes(uint8_t op)
{
    return op == MROCE_OP_WRITE_IMM || op == MROCE_OP_SEND ||
           op == MROCE_OP_SEND_IMM;
}

/* The suite's READ: its response lands in the READ area of its memory. */
static void build_read_slot(struct cf_peer *p, const struct cf_msg *m)
{
    struct cf_rd *r = &p->rd[m->msn % 64];
    if (p->rd_off + m->len > CF_MEM_LEN)
        p->rd_off = CF_MEM_LEN / 2;
    *r = (struct cf_rd){.used = true,
                        .stream = m->stream,
                        .msn = m->msn,
                        .len = m->len,
                        .off = p->rd_off,
                        .npkts = m->npkts};
    p->rd_off += m->len;
}

static void build_msg_fields(struct cf_t *t, struct cf_msg *m)
{
    struct cf_peer *p = t->p;
    if (!m->msn_set)
        m->msn = p->msn[m->stream]++;
    if (!m->ssn_set && build_consumes(m->op))
        m->ssn = p->ssn[m->stream]++;
    if (!m->va)
        m->va = t->iut.va + m->roff;
    if (!m->rkey_set)
        m->rkey = t->iut.rkey;
    m->npkts =
        m->op == MROCE_OP_READ_REQ || !m->len ? 1 : (m->len - 1) / p->mtu + 1;
    m->first_dsn = p->dsn;
    p->dsn += m->npkts;
    if (m->op == MROCE_OP_READ_REQ)
        build_read_slot(p, m);
}

static struct mroce_hdr build_msg_pkt(struct cf_t *t, const struct cf_msg *m,
                                      uint32_t i, uint16_t path)
{
    struct mroce_hdr h = cf_hdr(t, m->op, path);
    h.psn = cf_next_psn(t, path);
    h.dsn = m->first_dsn + i;
    h.stream = m->stream;
    h.msn = m->msn;
    h.msg_len = m->len;
    h.offset = m->op == MROCE_OP_READ_REQ ? 0 : i * t->p->mtu;
    h.va = m->va;
    h.rkey = m->rkey;
    h.ssn = m->ssn;
    h.imm = m->imm;
    return h;
}

static uint32_t build_chunk(const struct cf_t *t, const struct cf_msg *m,
                            uint32_t i)
{
    if (m->op == MROCE_OP_READ_REQ || !m->len)
        return 0;
    uint32_t off = i * t->p->mtu, left = m->len - off;
    return left < t->p->mtu ? left : t->p->mtu;
}

static void build_msg_one(struct cf_t *t, struct cf_msg *m, uint32_t i)
{
    struct cf_peer *p = t->p;
    uint16_t path = m->path >= 0 ? (uint16_t)m->path
                                 : (uint16_t)(p->rr_path++ % p->n_paths);
    struct mroce_hdr h = build_msg_pkt(t, m, i, path);
    if (i + 1 == m->npkts && !m->no_ackreq)
        h.flags = MROCE_HF_ACKREQ;
    if (i < 64) {
        m->dsn[i] = h.dsn;
        m->psn[i] = h.psn;
        m->pth[i] = path;
    }
    const uint8_t *d = m->data ? (const uint8_t *)m->data + i * p->mtu : NULL;
    cf_send(t, &h, d, build_chunk(t, m, i));
}

int cf_send_msg(struct cf_t *t, struct cf_msg *m)
{
    build_msg_fields(t, m);
    int sent = 0;
    for (uint32_t k = 0; k < m->npkts; k++) {
        uint32_t i = m->reverse ? m->npkts - 1 - k : k;
        if (i < 32 && (m->skip >> i) & 1)
            continue;
        build_msg_one(t, m, i);
        sent++;
    }
    return sent;
}

int cf_resend(struct cf_t *t, struct cf_msg *m, uint32_t i, uint16_t path)
{
    struct mroce_hdr h = build_msg_pkt(t, m, i, path);
    h.flags = MROCE_HF_RETX | (i + 1 == m->npkts ? MROCE_HF_ACKREQ : 0);
    if (i < 64) {
        m->psn[i] = h.psn;
        m->pth[i] = path;
    }
    const uint8_t *d =
        m->data ? (const uint8_t *)m->data + i * t->p->mtu : NULL;
    return cf_send(t, &h, d, build_chunk(t, m, i));
}
