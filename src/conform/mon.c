/* The wire monitor: every datagram the IUT sends, in every test, is checked
 * against the rules that hold for each packet on its own or for the
 * sequence on a path (format, ICRC, sequence numbers, retransmissions,
 * packetisation). Tallies are kept per rule over the whole run; the
 * monitor's test cases (t_mon.c) report them at the end. */
#include <stdio.h>
#include <string.h>

#include "conform/cf.h"
#include "wire/ackm.h"
#include "wire/be.h"
#include "wire/crc32c.h"

static struct cf_mon_rule mon_tab[] = {
    {"R-ENC-1", CF_KW_MUST, "each datagram is exactly one packet", 0, 0, ""},
    {"R-ENC-2", CF_KW_MUST, "packets go to the peer's announced port", 0, 0,
     ""},
    {"R-ENC-3", CF_KW_MUST, "each path has its own UDP source port", 0, 0, ""},
    {"R-ENC-6", CF_KW_MUST, "every packet is ECN-capable, ECT(0)", 0, 0, ""},
    {"R-ENC-9", CF_KW_MUST, "no packet is longer than mtu + 60 bytes", 0, 0,
     ""},
    {"R-ENC-10", CF_KW_MUST, "packets come from the announced address", 0, 0,
     ""},
    {"R-HDR-3", CF_KW_MUST, "version 1, reserved flag bits sent as zero", 0, 0,
     ""},
    {"R-HDR-4", CF_KW_MUST, "only opcodes of the table are sent", 0, 0, ""},
    {"R-VER-1", CF_KW_MUST, "every packet carries version 1", 0, 0, ""},
    {"R-VER-7", CF_KW_MUST,
     "only assigned code points: opcodes, flags, "
     "syndromes",
     0, 0, ""},
    {"R-HDR-6", CF_KW_MUST,
     "no bytes after the headers of a type without "
     "payload",
     0, 0, ""},
    {"R-HDR-7", CF_KW_MUST, "reserved and defined-zero fields sent as zero", 0,
     0, ""},
    {"R-HDR-8", CF_KW_MUST, "MTH path below the number of paths", 0, 0, ""},
    {"R-HDR-10", CF_KW_MUST, "MTH ts monotonic on each path", 0, 0, ""},
    {"R-HDR-11", CF_KW_MUST, "stream and msg_len constant per message", 0, 0,
     ""},
    {"R-HDR-12", CF_KW_MUST, "va and rkey constant per message", 0, 0, ""},
    {"R-HDR-13", CF_KW_MUST, "immediate constant per message", 0, 0, ""},
    {"R-HDR-14", CF_KW_MUST, "bit 0 of every ACK's SACK bitmap set", 0, 0, ""},
    {"R-HDR-16", CF_KW_MUST, "opcode 0x21 never sent", 0, 0, ""},
    {"R-CRC-1", CF_KW_MUST, "ICRC = CRC32C of the packet, big-endian", 0, 0,
     ""},
    {"R-CONN-1", CF_KW_MUST, "MTH conn is the id the destination chose", 0, 0,
     ""},
    {"R-SACK-2", CF_KW_MUST, "data and PROBEs take consecutive PSNs per path",
     0, 0, ""},
    {"R-DSN-1", CF_KW_MUST, "new DSNs are consecutive; a resend keeps its DSN",
     0, 0, ""},
    {"R-DSN-7", CF_KW_MUST, "no DSN beyond the peer's window", 0, 0, ""},
    {"R-LOSS-3", CF_KW_MUST,
     "a retransmission repeats the bytes after the MTH "
     "and sets RETX",
     0, 0, ""},
    {"R-MSG-1", CF_KW_MUST,
     "messages cut into mtu-sized packets at offsets "
     "i * mtu",
     0, 0, ""},
    {"R-MSG-7", CF_KW_MUST, "SSN = the receive-consuming messages before", 0, 0,
     ""},
    {"R-MSG-15", CF_KW_MUST, "no atomic opcode (0x07-0x0F) sent", 0, 0, ""},
    {"R-ACK-2", CF_KW_MUST, "ACK: flags 0", 0, 0, ""},
    {"R-HDR-9", CF_KW_MUST,
     "MTH psn of ACK (sack_high or the PROBE "
     "answered), CLOSE and CLOSE_ACK (next DSN)",
     0, 0, ""},
    {"R-VAL-8", CF_KW_MUST, "no answer larger than what it answers", 0, 0, ""},
    {"R-ACK-5", CF_KW_MUST, "ACKs name only PSNs the peer sent", 0, 0, ""},
    {"R-PATH-7", CF_KW_MUST, "PROBE: ACKREQ set, as long as an ACK", 0, 0, ""},
    {"R-AEAD-1", CF_KW_MUST, "every packet of a secure connection sealed", 0, 0,
     ""},
    {"R-AEAD-2", CF_KW_MUST,
     "sealed layout: tag of 16 bytes, protection "
     "byte of the mode",
     0, 0, ""},
    {"R-AEAD-3", CF_KW_MUST,
     "every tag verifies under the spec's keys, "
     "nonce and AAD",
     0, 0, ""},
    {"R-AEAD-4", CF_KW_MUST, "no control sequence number used twice", 0, 0, ""},
    {"R-ACKM-1", CF_KW_MUST, "no ACKM unless both announced the feature", 0, 0,
     ""},
    {"R-ACKM-2", CF_KW_MUST,
     "ACKM: 4 + 48 n bytes, n within the mtu's bound, records of distinct "
     "paths below N, none the ACKM's own",
     0, 0, ""},
};

#define MON_N (int)(sizeof(mon_tab) / sizeof(mon_tab[0]))

struct cf_mon_rule *cf_mon_rules(int *n)
{
    *n = MON_N;
    return mon_tab;
}

struct cf_mon_rule *cf_mon_get(const char *rule)
{
    for (int i = 0; i < MON_N; i++)
        if (!strcmp(mon_tab[i].rule, rule))
            return &mon_tab[i];
    return NULL;
}

void cf_mon_clear_all(void)
{
    for (int i = 0; i < MON_N; i++) {
        mon_tab[i].checked = mon_tab[i].violated = 0;
        mon_tab[i].first[0] = 0;
    }
}

/* Counts one check of `rule`; records a violation when !ok. */
static bool mon(struct cf_t *t, struct cf_pkt *pk, const char *rule, bool ok,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#include <stdarg.h>

static bool mon(struct cf_t *t, struct cf_pkt *pk, const char *rule, bool ok,
                const char *fmt, ...)
{
    struct cf_mon_rule *r = cf_mon_get(rule);
    if (!r)
        return ok;
    r->checked++;
    if (ok)
        return true;
    r->violated++;
    pk->mon_viol++;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (!r->first[0])
        snprintf(r->first, sizeof(r->first), "%s: %s",
                 t->test ? t->test->id : "?", what);
    if (t->mon_notes++ < 3)
        cf_note(t, "monitor %s: %s", rule, what);
    return false;
}

static bool mon_is_data(uint8_t op)
{
    return op >= MROCE_OP_WRITE && op <= MROCE_OP_READ_RESP;
}

/* ---- the packet on its own ---- */

static void mon_decode(struct cf_t *t, struct cf_pkt *pk)
{
    const uint8_t *b = pk->buf;
    bool opcode_known = pk->len >= 2 && mroce_wire_op_info(b[1]);
    mon(t, pk, "R-ENC-1", pk->derr == MROCE_WIRE_OK,
        "a datagram of %zu bytes does not decode (%d)", pk->len, pk->derr);
    if (pk->len >= 2) {
        mon(t, pk, "R-HDR-4", opcode_known, "opcode 0x%02x", b[1]);
        mon(t, pk, "R-HDR-16", b[1] != 0x21, "opcode 0x21 sent");
        mon(t, pk, "R-MSG-15", b[1] < 0x07 || b[1] > 0x0F,
            "atomic opcode 0x%02x sent", b[1]);
        mon(t, pk, "R-HDR-3", b[0] >> 4 == 1 && !(b[0] & 3),
            "byte 0 is 0x%02x (SEAL or reserved bit on a plain connection)",
            b[0]);
        mon(t, pk, "R-VER-1", b[0] >> 4 == 1, "version %u", b[0] >> 4);
        mon(t, pk, "R-VER-7", opcode_known && !(b[0] & 3),
            "opcode 0x%02x flags 0x%x", b[1], b[0] & 0xF);
    }
    if (opcode_known && !pk->sealed &&
        pk->len >= (size_t)mroce_wire_hdr_len(b[1]) + 4) {
        size_t body = pk->len - 4;
        mon(t, pk, "R-CRC-1",
            mroce_crc32c(0, b, body) == mroce_be32_get(b + body),
            "ICRC %08x, CRC32C %08x", mroce_be32_get(b + body),
            mroce_crc32c(0, b, body));
        bool pay = mroce_wire_op_info(b[1])->headers & MROCE_H_PAYLOAD;
        mon(t, pk, "R-HDR-6", pay || body == mroce_wire_hdr_len(b[1]),
            "%s with %zu bytes after its headers", mroce_wire_op_name(b[1]),
            body - mroce_wire_hdr_len(b[1]));
    }
}

static void mon_addressing(struct cf_t *t, struct cf_pkt *pk)
{
    const struct cf_peer *p = t->p;
    size_t n = p->iut_family == 6 ? 16 : 4;
    mon(t, pk, "R-ENC-2", pk->sock == 0,
        "a packet went to the suite's second socket");
    mon(t, pk, "R-ENC-6", pk->ecn == 2, "ECN field %u", pk->ecn);
    mon(t, pk, "R-ENC-10", !memcmp(pk->src, p->iut_ip, n),
        "source address is not the announced one");
    size_t most = (size_t)p->mtu + (pk->sealed ? 72 : 60);
    mon(t, pk, "R-ENC-9", pk->wire_len <= most, "%zu bytes with mtu %u",
        pk->wire_len, p->mtu);
}

/* R-HDR-9, R-VAL-5: CLOSE and CLOSE_ACK carry the IUT's next DSN. */
static void mon_close(struct cf_t *t, struct cf_pkt *pk)
{
    const struct cf_peer *p = t->p;
    if (p->mon.unreliable || pk->h.conn != p->my_id)
        return;
    uint32_t nxt = p->iut_init_dsn + p->mon.max_new;
    mon(t, pk, "R-HDR-9", pk->h.psn == nxt,
        "%s with psn %u, the IUT's next DSN is %u",
        mroce_wire_op_name(pk->h.opcode), pk->h.psn, nxt);
}

static void mon_fields(struct cf_t *t, struct cf_pkt *pk)
{
    const struct mroce_hdr *h = &pk->h;
    const uint8_t *b = pk->buf;
    const struct cf_peer *p = t->p;
    mon(t, pk, "R-CONN-1", h->conn == p->my_id, "conn 0x%08x, ours 0x%08x",
        h->conn, p->my_id);
    mon(t, pk, "R-HDR-8", h->path < p->n_paths, "path %u of %u", h->path,
        p->n_paths);
    if (mon_is_data(h->opcode))
        mon(t, pk, "R-HDR-7", !b[22] && !b[23], "DXH reserved bytes %02x%02x",
            b[22], b[23]);
    if (h->opcode == MROCE_OP_NACK)
        mon(t, pk, "R-VER-7",
            h->nak_code >= MROCE_NAK_RNR &&
                h->nak_code <= MROCE_NAK_CONN_CLOSED,
            "NACK syndrome %u", h->nak_code);
    if (h->opcode == MROCE_OP_NACK)
        mon(t, pk, "R-HDR-7",
            !b[23] && (h->nak_code == MROCE_NAK_RNR || !h->nak_info),
            "NKH reserved byte %02x, info %u", b[23], h->nak_info);
    if (h->opcode == MROCE_OP_PROBE) {
        mon(t, pk, "R-PATH-7", (h->flags & MROCE_HF_ACKREQ) && pk->len == 72,
            "PROBE flags 0x%x, %zu bytes", h->flags, pk->len);
        bool zero = pk->len >= 68;
        for (size_t i = 16; zero && i < 68; i++)
            zero = !b[i];
        mon(t, pk, "R-HDR-7", zero, "PROBE padding not zero");
    }
    if (h->opcode == MROCE_OP_CLOSE || h->opcode == MROCE_OP_CLOSE_ACK)
        mon_close(t, pk);
    /* R-VAL-8: an ACK is as long as a PROBE, a NACK shorter than any
     * data packet, a CLOSE_ACK as long as a CLOSE */
    if (h->opcode == MROCE_OP_ACK || h->opcode == MROCE_OP_NACK ||
        h->opcode == MROCE_OP_CLOSE_ACK)
        mon(t, pk, "R-VAL-8",
            pk->len <= (h->opcode == MROCE_OP_ACK    ? 72u
                        : h->opcode == MROCE_OP_NACK ? 36u
                                                     : 20u),
            "%s of %zu bytes", mroce_wire_op_name(h->opcode), pk->len);
}

static void mon_ack(struct cf_t *t, struct cf_pkt *pk)
{
    const struct mroce_hdr *h = &pk->h;
    const struct cf_peer *p = t->p;
    if (h->path >= p->n_paths)
        return;
    /* R-VAL-4: an answer to a PROBE names it; others name sack_high */
    bool probe = h->psn != h->sack_high && cf_sent_probe(p, h->path, h->psn);
    mon(t, pk, "R-HDR-9", h->psn == h->sack_high || probe,
        "ACK for path %u with psn %u, sack_high %u and no such PROBE sent",
        h->path, h->psn, h->sack_high);
    mon(t, pk, "R-HDR-14", mroce_sack_test(h->sack, 0) || probe,
        "ACK bit 0 clear (psn %u, sack_high %u)", h->psn, h->sack_high);
    mon(t, pk, "R-ACK-2", h->flags == 0, "ACK flags 0x%x", h->flags);
    uint32_t last = p->tx_high[h->path]; /* the suite's last PSN sent */
    bool sent = p->tx_any[h->path];
    mon(t, pk, "R-ACK-5",
        probe || (sent && (int32_t)(h->sack_high - last) <= 0),
        "ACK for path %u names PSN %u, the suite sent %s %u", h->path,
        h->sack_high, sent ? "up to" : "nothing, next", last);
}

/* R-ACKM-2: the payload's layout and the paths its records name; each
 * record names only PSNs the suite sent, with bit 0 set (R-ACK-5,
 * R-HDR-14: a record never answers a PROBE). */
static void mon_ackm_recs(struct cf_t *t, struct cf_pkt *pk, int n)
{
    const struct cf_peer *p = t->p;
    uint64_t seen[4] = {0};
    seen[pk->h.path >> 6] |= 1ull << (pk->h.path & 63);
    for (int i = 0; i < n; i++) {
        struct mroce_ackm_rec r;
        mroce_ackm_get(&pk->h, (unsigned)i, &r);
        bool dup =
            r.path < CF_MAX_PATHS && (seen[r.path >> 6] >> (r.path & 63)) & 1;
        if (!mon(t, pk, "R-ACKM-2", r.path < p->n_paths && !dup,
                 "ACKM for path %u: record %d names path %u (N %u%s)",
                 pk->h.path, i, r.path, p->n_paths,
                 dup ? ", named before or the ACKM's own" : ""))
            continue;
        seen[r.path >> 6] |= 1ull << (r.path & 63);
        mon(t, pk, "R-HDR-14", mroce_sack_test(r.sack, 0),
            "ACKM record for path %u: bit 0 clear", r.path);
        uint32_t last = p->tx_high[r.path];
        bool sent = p->tx_any[r.path];
        mon(t, pk, "R-ACK-5", sent && (int32_t)(r.sack_high - last) <= 0,
            "ACKM record for path %u names PSN %u, the suite sent %s %u",
            r.path, r.sack_high, sent ? "up to" : "nothing, next", last);
    }
}

static void mon_ackm(struct cf_t *t, struct cf_pkt *pk)
{
    const struct cf_peer *p = t->p;
    mon(t, pk, "R-ACKM-1", p->ackm,
        "an ACKM on a connection without the feature ACKM");
    uint32_t hold;
    int n = mroce_ackm_check(&pk->h, &hold);
    uint32_t most = p->mtu > 16 ? (p->mtu - 16) / MROCE_ACKM_REC_LEN : 0;
    const uint8_t *pl = pk->h.payload;
    if (!mon(t, pk, "R-ACKM-2", n >= 0 && (uint32_t)n <= most && !pl[1],
             "ACKM payload of %u bytes, count %d, reserved %u (mtu %u: at "
             "most %u records)",
             pk->h.payload_len, pk->h.payload_len ? pl[0] : -1,
             pk->h.payload_len > 1 ? pl[1] : 0, p->mtu, most) ||
        n < 0)
        return;
    mon_ackm_recs(t, pk, n);
}

/* ---- sequences ---- */

/* R-ENC-3: two paths hold one port at once. A path may be re-pathed
 * without sending (R-PATH-16), and its old port be given to another
 * path, so one path's use of another's last-seen port proves nothing;
 * path p using port X again after path q used X, while q's last use is
 * still X, does: both held X in between. */
static void mon_ports(struct cf_t *t, struct cf_pkt *pk, struct cf_monpath *mp)
{
    struct cf_monpath *all = t->p->mon.path;
    uint16_t p = pk->h.path;
    int q = mp->port == pk->sport ? mp->taken_by - 1 : -1;
    bool shared = q >= 0 && all[q].any && all[q].port == pk->sport;
    mon(t, pk, "R-ENC-3", !shared, "paths %u and %d share port %u", p, q,
        pk->sport);
    for (uint16_t k = 0; k < t->p->n_paths; k++)
        if (k != p && all[k].any && all[k].port == pk->sport)
            all[k].taken_by = p + 1;
    mp->port = pk->sport;
    mp->taken_by = 0;
}

static void mon_psn(struct cf_t *t, struct cf_pkt *pk)
{
    struct cf_monpath *mp = &t->p->mon.path[pk->h.path];
    const struct mroce_hdr *h = &pk->h;
    /* R-VAL-4: a path may go on after a PSN the suite's ACKs showed it
     * holding beyond the IUT's own */
    const struct cf_peer *p = t->p;
    bool resync = p->ack_any[h->path] &&
                  (int32_t)(p->ack_high[h->path] - mp->next_psn) >= 0 &&
                  h->psn == p->ack_high[h->path] + 1;
    if (mp->any && !t->p->mon.unreliable)
        mon(t, pk, "R-SACK-2", h->psn == mp->next_psn || resync,
            "path %u PSN %u, expected %u", h->path, h->psn, mp->next_psn);
    else if (!mp->any)
        mon(t, pk, "R-SACK-2", h->psn == t->p->iut_init_psn,
            "path %u starts at PSN %u, init_psn %u", h->path, h->psn,
            t->p->iut_init_psn);
    if (mp->any)
        mon(t, pk, "R-HDR-10", (int32_t)(h->ts - mp->last_ts) >= 0,
            "path %u ts went back from %u to %u", h->path, mp->last_ts, h->ts);
    mp->any = true;
    mp->next_psn = h->psn + 1;
    mp->last_ts = h->ts;
    mon_ports(t, pk, mp);
}

/* CRC32C of the bytes the retransmission must repeat (R-LOSS-3): after the
 * MTH, without the ICRC; a READ_RESP's headers only (R-MSG-10). */
static uint32_t mon_body_crc(const struct cf_pkt *pk, uint32_t *len)
{
    size_t end = pk->len - 4;
    if (pk->h.opcode == MROCE_OP_READ_RESP)
        end = mroce_wire_hdr_len(pk->h.opcode);
    *len = (uint32_t)(end - 16);
    return mroce_crc32c(0, pk->buf + 16, end - 16);
}

static void mon_dsn(struct cf_t *t, struct cf_pkt *pk)
{
    struct cf_mon *m = &t->p->mon;
    const struct mroce_hdr *h = &pk->h;
    struct cf_mondsn *d = &m->dsn[h->dsn % CF_MON_DSNS];
    uint32_t len, crc = mon_body_crc(pk, &len);
    bool retx = h->flags & MROCE_HF_RETX;
    if (d->seen && d->dsn == h->dsn) {
        mon(t, pk, "R-LOSS-3", retx && d->crc == crc && d->len == len,
            "DSN %u sent again %s", h->dsn,
            retx ? "with other bytes" : "without RETX");
        return;
    }
    pk->first = true;
    /* a datapath may reorder one burst across its sockets (paths), so
     * the check is that no DSN is skipped: no hole below the highest at
     * the end of the test (cf_mon_finish), none before init_dsn */
    uint32_t k = h->dsn - t->p->iut_init_dsn;
    mon(t, pk, "R-DSN-1", k < 0x80000000u, "DSN %u before init_dsn %u", h->dsn,
        t->p->iut_init_dsn);
    if (k < CF_MON_DSNS) {
        m->new_dsn[k] = 1;
        if (k + 1 > m->max_new)
            m->max_new = k + 1;
    }
    *d =
        (struct cf_mondsn){.seen = true, .dsn = h->dsn, .crc = crc, .len = len};
    uint32_t w = h->dsn - t->p->dsn_cum;
    mon(t, pk, "R-DSN-7", w >= 0x80000000u || w < t->p->dsn_window,
        "DSN %u with the window at %u + %u", h->dsn, t->p->dsn_cum,
        t->p->dsn_window);
}

static bool mon_consumes(uint8_t op)
{
    return op == MROCE_OP_WRITE_IMM || op == MROCE_OP_SEND ||
           op == MROCE_OP_SEND_IMM;
}

static void mon_chunk(struct cf_t *t, struct cf_pkt *pk)
{
    const struct mroce_hdr *h = &pk->h;
    uint32_t mtu = t->p->mtu;
    bool ok;
    if (h->opcode == MROCE_OP_READ_REQ)
        ok = h->offset == 0 && h->payload_len == 0;
    else if (!h->msg_len)
        ok = h->offset == 0 && h->payload_len == 0;
    else
        ok = h->offset % mtu == 0 && h->offset < h->msg_len &&
             h->payload_len ==
                 (h->msg_len - h->offset < mtu ? h->msg_len - h->offset : mtu);
    mon(t, pk, "R-MSG-1", ok, "%s offset %u payload %u of msg_len %u (mtu %u)",
        mroce_wire_op_name(h->opcode), h->offset, h->payload_len, h->msg_len,
        mtu);
}

/* Fields constant per message (R-HDR-11..13) and the SSN (R-MSG-7). */
static void mon_msg(struct cf_t *t, struct cf_pkt *pk)
{
    const struct mroce_hdr *h = &pk->h;
    struct cf_mon *m = &t->p->mon;
    if (h->stream >= CF_MAX_STREAMS || h->opcode == MROCE_OP_READ_RESP)
        return;
    struct cf_monmsg *g = &m->msg[h->stream][h->msn % CF_MON_MSGS];
    if (g->used && g->msn == h->msn) {
        mon(t, pk, "R-HDR-11", g->op == h->opcode && g->len == h->msg_len,
            "message %u/%u changed opcode or msg_len", h->stream, h->msn);
        mon(t, pk, "R-HDR-12", g->va == h->va && g->rkey == h->rkey,
            "message %u/%u changed va or rkey", h->stream, h->msn);
        mon(t, pk, "R-HDR-13", g->imm == h->imm && g->ssn == h->ssn,
            "message %u/%u changed imm or ssn", h->stream, h->msn);
        return;
    }
    *g = (struct cf_monmsg){.used = true,
                            .op = h->opcode,
                            .msn = h->msn,
                            .len = h->msg_len,
                            .ssn = h->ssn,
                            .imm = h->imm,
                            .va = h->va,
                            .rkey = h->rkey};
    if (h->msn != m->next_msn[h->stream])
        return; /* an earlier message is not seen yet: cannot count */
    if (mon_consumes(h->opcode)) {
        uint32_t want = m->next_ssn[h->stream]++;
        mon(t, pk, "R-MSG-7", h->ssn == want,
            "message %u/%u has SSN %u, expected %u", h->stream, h->msn, h->ssn,
            want);
    }
    m->next_msn[h->stream]++;
}

void cf_mon_finish(struct cf_t *t)
{
    struct cf_mon *m = &t->p->mon;
    if (m->unreliable || !m->max_new)
        return;
    struct cf_pkt none = {0};
    uint32_t hole = 0;
    while (hole < m->max_new && m->new_dsn[hole])
        hole++;
    mon(t, &none, "R-DSN-1", hole == m->max_new,
        "DSN %u never sent, DSNs up to %u were", t->p->iut_init_dsn + hole,
        t->p->iut_init_dsn + m->max_new - 1);
}

/* R-AEAD-1..4 on a connection in a secure mode. */
static void mon_aead(struct cf_t *t, struct cf_pkt *pk)
{
    struct cf_aead *a = &t->p->aead;
    mon(t, pk, "R-AEAD-1", (pk->flags0 & 0x2) != 0,
        "a packet of a secure connection without SEAL (byte 0 0x%02x)",
        pk->flags0);
    mon(t, pk, "R-AEAD-3", pk->derr != CF_DERR_TAG,
        "a tag that does not verify (%zu bytes)", pk->wire_len);
    if (!pk->sealed || pk->derr)
        return;
    const struct mroce_hdr *h = &pk->h;
    size_t hl = mroce_wire_hdr_len(h->opcode);
    mon(t, pk, "R-AEAD-2", pk->wire_len == hl + h->payload_len + 16,
        "%zu bytes for %zu of headers and %u of payload", pk->wire_len, hl,
        h->payload_len);
    if (h->opcode >= MROCE_OP_WRITE && h->opcode <= MROCE_OP_READ_RESP)
        mon(t, pk, "R-AEAD-2", pk->prot == (a->mode == 2 ? 1 : 0),
            "protection byte 0x%02x in mode %d", pk->prot, a->mode);
    bool control = h->opcode == MROCE_OP_ACK || h->opcode == MROCE_OP_NACK ||
                   h->opcode == MROCE_OP_CLOSE ||
                   h->opcode == MROCE_OP_CLOSE_ACK;
    if (!control)
        return;
    uint32_t k = h->ts; /* the CSN, from 0 */
    bool fresh = k >= CF_MON_DSNS || !t->p->mon.csn_seen[k];
    mon(t, pk, "R-AEAD-4", fresh, "CSN %u used twice", k);
    if (k < CF_MON_DSNS)
        t->p->mon.csn_seen[k] = 1;
}

void cf_mon_packet(struct cf_t *t, struct cf_pkt *pk)
{
    if (t->p->aead.mode)
        mon_aead(t, pk);
    if (pk->derr == CF_DERR_TAG)
        return;
    for (int i = 0; !pk->derr && i < 4; i++)
        if (t->p->extra_ids[i] && pk->h.conn == t->p->extra_ids[i])
            return; /* another connection of the test: its own rules */
    mon_decode(t, pk);
    mon_addressing(t, pk);
    if (pk->derr)
        return;
    mon_fields(t, pk);
    const struct mroce_hdr *h = &pk->h;
    if (h->conn != t->p->my_id || h->path >= t->p->n_paths)
        return;
    if (h->opcode == MROCE_OP_ACK || h->opcode == MROCE_OP_ACKM)
        mon_ack(t, pk);
    if (h->opcode == MROCE_OP_ACKM)
        mon_ackm(t, pk);
    if (mon_is_data(h->opcode) || h->opcode == MROCE_OP_PROBE)
        mon_psn(t, pk);
    if (!mon_is_data(h->opcode))
        return;
    mon_dsn(t, pk);
    mon_chunk(t, pk);
    mon_msg(t, pk);
}
