/* The test peer's key schedule and sealing (see peer_sec.h), from the
 * text of docs/spec.md section 3.14 (R-AEAD-1..R-AEAD-7). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_crypto.h>

#include "support/peer_sec.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void expand(const struct mroce_crypto *c, const uint8_t *prk,
                   const char *label, const uint8_t *ctx, size_t n,
                   uint8_t *out, size_t len)
{
    uint8_t info[64];
    size_t l = strlen(label);
    memcpy(info, label, l);
    if (n) /* ctx may be NULL when empty: memcpy's arguments never are */
        memcpy(info + l, ctx, n);
    assert_int_equal(c->hkdf_expand(c->ud, prk, 32, info, l + n, out, len), 0);
}

/* R-AEAD-6: D(0) of the direction carrying conn id dst, from src. */
static void dir_secret(const struct mroce_crypto *c, const uint8_t *secret,
                       int mode, uint32_t dst, uint32_t src, uint8_t *out)
{
    uint8_t x[9] = {(uint8_t)mode};
    put32(x + 1, dst);
    put32(x + 5, src);
    expand(c, secret, "mroce dir", x, 9, out, 32);
}

/* R-AEAD-7: D(e) for e = 0..PEER_SEC_EPOCHS-1. */
static void chain(const struct mroce_crypto *c, uint8_t ds[][32])
{
    for (int e = 1; e < PEER_SEC_EPOCHS; e++)
        expand(c, ds[e - 1], "mroce ku", NULL, 0, ds[e], 32);
}

struct peer_sec *peer_sec_new(const struct peer *p, int mode,
                              const uint8_t *secret)
{
    struct peer_sec *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->mode = mode;
    s->c = mroce_crypto_get(MROCE_CRYPTO_OPENSSL);
    assert_non_null(s->c);
    /* the peer sends with the engine's id in MTH conn */
    dir_secret(s->c, secret, mode, p->local.conn_id, p->remote.conn_id,
               s->tx_ds[0]);
    chain(s->c, s->tx_ds);
    uint8_t rx[PEER_SEC_EPOCHS][32];
    dir_secret(s->c, secret, mode, p->remote.conn_id, p->local.conn_id, rx[0]);
    chain(s->c, rx);
    for (int e = 0; e < PEER_SEC_EPOCHS; e++) {
        uint8_t key[16];
        expand(s->c, rx[e], "mroce key", NULL, 0, key, 16);
        expand(s->c, rx[e], "mroce iv", NULL, 0, s->rx_iv[e], 12);
        s->rx_key[e] = s->c->key_new(s->c->ud, key);
        assert_non_null(s->rx_key[e]);
    }
    return s;
}

void peer_sec_delete(struct peer_sec *s)
{
    if (!s)
        return;
    for (int e = 0; e < PEER_SEC_EPOCHS; e++)
        s->c->key_free(s->c->ud, s->rx_key[e]);
    free(s);
}

void peer_sec_free(struct peer *p)
{
    peer_sec_delete(p->sec);
    p->sec = NULL;
}

void peer_sec_setup(struct peer *p, int mode, const uint8_t *secret)
{
    assert_int_equal(mroce_conn_set_secret(p->conn, mode, secret, 32), 0);
    p->sec = peer_sec_new(p, mode, secret);
}

static bool is_ctl(uint8_t op)
{
    return op == MROCE_OP_ACK || op == MROCE_OP_ACKM || op == MROCE_OP_NACK ||
           op == MROCE_OP_CLOSE || op == MROCE_OP_CLOSE_ACK;
}

/* R-AEAD-4: iv XOR (domain, path, 0, seq). */
static void nonce(const uint8_t *iv, const uint8_t *pkt, uint8_t *out)
{
    bool ctl = is_ctl(pkt[1]);
    uint8_t n[12] = {0, ctl ? 1 : 0, ctl ? 0 : pkt[2], ctl ? 0 : pkt[3]};
    memcpy(n + 8, pkt + (ctl ? 12 : 8), 4);
    for (int i = 0; i < 12; i++)
        out[i] = iv[i] ^ n[i];
}

size_t peer_sec_seal(struct peer_sec *s, const struct mroce_hdr *h,
                     const void *payload, uint32_t len, uint8_t *buf)
{
    int hl = mroce_wire_write_hdr(h, buf, MROCE_MAX_HDR_LEN);
    assert_true(hl > 0);
    assert_true(s->tx_epoch < PEER_SEC_EPOCHS);
    const uint8_t *ds = s->tx_ds[s->tx_epoch];
    uint8_t key[16], iv[12], n[12];
    expand(s->c, ds, "mroce key", NULL, 0, key, 16);
    expand(s->c, ds, "mroce iv", NULL, 0, iv, 12);
    /* R-AEAD-1, R-AEAD-2: SEAL, key phase, CSN, protection byte */
    buf[0] = (uint8_t)(buf[0] | 0x2 | (s->tx_epoch & 1));
    if (is_ctl(h->opcode))
        put32(buf + 12, s->csn++);
    if (mroce_wire_op_info(h->opcode)->headers & MROCE_H_DXH)
        buf[16 + 6] = s->mode == MROCE_SEC_ENCRYPT ? 1 : 0;
    if (len)
        memcpy(buf + hl, payload, len);
    nonce(iv, buf, n);
    void *k = s->c->key_new(s->c->ud, key);
    int rc;
    if (s->mode == MROCE_SEC_ENCRYPT)
        rc = s->c->seal(s->c->ud, k, n, buf, (size_t)hl, NULL, 0, buf + hl,
                        buf + hl, len, buf + hl + len);
    else
        rc = s->c->seal(s->c->ud, k, n, buf, (size_t)hl + len, NULL, 0, NULL,
                        NULL, 0, buf + hl + len);
    s->c->key_free(s->c->ud, k);
    assert_int_equal(rc, 0);
    return (size_t)hl + len + 16;
}

static int open_epoch(struct peer_sec *s, int e, uint8_t *buf, size_t hl,
                      size_t plen)
{
    uint8_t n[12], tmp[PEER_PKT_MAX];
    nonce(s->rx_iv[e], buf, n);
    const uint8_t *tag = buf + hl + plen;
    if (s->mode == MROCE_SEC_ENCRYPT) {
        if (s->c->open(s->c->ud, s->rx_key[e], n, buf, hl, NULL, 0, buf + hl,
                       tmp, plen, tag))
            return -1;
        memcpy(buf + hl, tmp, plen);
        return 0;
    }
    return s->c->open(s->c->ud, s->rx_key[e], n, buf, hl + plen, NULL, 0, NULL,
                      NULL, 0, tag)
               ? -1
               : 0;
}

int peer_sec_open(struct peer_sec *s, uint8_t *buf, size_t len)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(buf[1]);
    if (!(buf[0] & 0x2) || !oi || len < (size_t)oi->hdr_len + 16)
        return -1;
    size_t plen = len - oi->hdr_len - 16;
    int enc_byte = oi->headers & MROCE_H_DXH ? buf[16 + 6] : -1;
    if (enc_byte >= 0 && enc_byte != (s->mode == MROCE_SEC_ENCRYPT))
        return -1;
    for (uint32_t e = 0; e < PEER_SEC_EPOCHS; e++) {
        if ((e & 1) != (buf[0] & 1u))
            continue;
        if (open_epoch(s, (int)e, buf, oi->hdr_len, plen) == 0) {
            if (e > s->rx_epoch_seen)
                s->rx_epoch_seen = e;
            s->opened++;
            return 0;
        }
    }
    return -1;
}
