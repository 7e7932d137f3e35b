/* The secure modes (docs/spec.md section 3.14, R-AEAD-*): every packet of
 * an authenticated or encrypted connection is sealed with AES-128-GCM
 * under its direction's current key, and every packet it receives is
 * opened, and checked against a replay window, before anything else
 * looks at it. The cipher and HKDF are the context's crypto provider
 * (mroce_ctx_attr.crypto); this file holds the state and the rules. */
#include <string.h>

#include "engine/eng.h"
#include "engine/seal.h"
#include "wire/aead.h"
#include "wire/be.h"

/* A key object of the provider and the IV it goes with (R-AEAD-6). */
struct aead_key {
    void *k;
    uint8_t iv[MROCE_AEAD_IV_LEN];
};

/* R-AEAD-9: the 256 sequence numbers up to the highest authenticated
 * one; bit i (mroce_sack_test layout) = high - i seen. It starts just
 * before the space's first number, with everything before it "seen". */
struct aead_win {
    uint32_t high;
    uint64_t bits[4];
};

struct eng_aead {
    uint8_t mode;                     /* MROCE_SEC_AUTH or _ENCRYPT */
    uint8_t secret[MROCE_SECRET_LEN]; /* wiped once connected */
    /* transmit: the key of epoch tx_epoch, whose secret is tx_ds */
    struct aead_key tx;
    uint8_t tx_ds[MROCE_SECRET_LEN];
    uint32_t tx_epoch, csn;
    uint64_t tx_used, key_pkts;
    /* receive: keys of epochs rx_epoch - 1 (has_prev), rx_epoch and
     * rx_epoch + 1, whose secret is rx_ds (R-AEAD-7) */
    struct aead_key rx_prev, rx_cur, rx_next;
    bool has_prev;
    uint8_t rx_ds[MROCE_SECRET_LEN];
    uint32_t rx_epoch;
    struct aead_win *psn_win; /* per path */
    uint32_t n_win;
    struct aead_win csn_win;
};

static void seal_wipe(void *p, size_t n)
{
    volatile uint8_t *v = p;
    while (n--)
        *v++ = 0;
}

/* ---- key schedule (R-AEAD-6, R-AEAD-7) ---- */

/* HKDF-Expand(prk, label || context, out_len). */
static int seal_expand(const struct mroce_crypto *cr, const uint8_t *prk,
                       const char *label, const uint8_t *context, size_t n_ctx,
                       uint8_t *out, size_t out_len)
{
    uint8_t info[32];
    size_t l = strlen(label);
    memcpy(info, label, l);
    if (n_ctx)
        memcpy(info + l, context, n_ctx);
    return cr->hkdf_expand(cr->ud, prk, MROCE_SECRET_LEN, info, l + n_ctx, out,
                           out_len);
}

/* key(e) and iv(e) of the epoch whose secret is ds. */
static int seal_key_iv(const struct mroce_crypto *cr, const uint8_t *ds,
                       uint8_t *key, uint8_t *iv)
{
    int rc = seal_expand(cr, ds, "mroce key", NULL, 0, key, MROCE_AEAD_KEY_LEN);
    return rc ? rc
              : seal_expand(cr, ds, "mroce iv", NULL, 0, iv, MROCE_AEAD_IV_LEN);
}

static int seal_key_make(struct mroce_ctx *ctx, const uint8_t *ds,
                         struct aead_key *k)
{
    uint8_t key[MROCE_AEAD_KEY_LEN];
    int rc = seal_key_iv(&ctx->crypto, ds, key, k->iv);
    if (!rc && !(k->k = ctx->crypto.key_new(ctx->crypto.ud, key)))
        rc = MROCE_ENOMEM;
    seal_wipe(key, sizeof(key));
    return rc;
}

static void seal_key_drop(struct mroce_ctx *ctx, struct aead_key *k)
{
    if (k->k)
        ctx->crypto.key_free(ctx->crypto.ud, k->k);
    k->k = NULL;
    seal_wipe(k->iv, sizeof(k->iv));
}

/* D(e+1) = HKDF-Expand(D(e), "mroce ku", 32), in place. */
static int seal_ku(const struct mroce_crypto *cr, uint8_t *ds)
{
    uint8_t n[MROCE_SECRET_LEN];
    int rc = seal_expand(cr, ds, "mroce ku", NULL, 0, n, sizeof(n));
    if (!rc)
        memcpy(ds, n, sizeof(n));
    seal_wipe(n, sizeof(n));
    return rc;
}

/* D(0) of the direction whose packets carry conn id dst, sent by the
 * endpoint whose own id is src. */
static int seal_dir(const struct mroce_crypto *cr, int mode,
                    const uint8_t *secret, uint32_t dst, uint32_t src,
                    uint8_t *out)
{
    uint8_t x[9];
    x[0] = (uint8_t)mode;
    mroce_be32_put(x + 1, dst);
    mroce_be32_put(x + 5, src);
    return seal_expand(cr, secret, "mroce dir", x, sizeof(x), out,
                       MROCE_SECRET_LEN);
}

int eng_seal_derive(const struct mroce_crypto *cr, int mode,
                    const uint8_t *secret, uint32_t dst, uint32_t src,
                    uint32_t epoch, uint8_t *key, uint8_t *iv)
{
    uint8_t ds[MROCE_SECRET_LEN];
    int rc = seal_dir(cr, mode, secret, dst, src, ds);
    for (uint32_t e = 0; !rc && e < epoch; e++)
        rc = seal_ku(cr, ds);
    if (!rc)
        rc = seal_key_iv(cr, ds, key, iv);
    seal_wipe(ds, sizeof(ds));
    return rc;
}

static void seal_keys_drop(struct mroce_conn *c)
{
    struct eng_aead *a = c->aead;
    seal_key_drop(c->ctx, &a->tx);
    seal_key_drop(c->ctx, &a->rx_prev);
    seal_key_drop(c->ctx, &a->rx_cur);
    seal_key_drop(c->ctx, &a->rx_next);
    seal_wipe(a->tx_ds, sizeof(a->tx_ds));
    seal_wipe(a->rx_ds, sizeof(a->rx_ds));
    eng_free(c->ctx, a->psn_win);
    a->psn_win = NULL;
}

static int seal_keys_make(struct mroce_conn *c, uint32_t remote_id)
{
    struct eng_aead *a = c->aead;
    const struct mroce_crypto *cr = &c->ctx->crypto;
    uint32_t local_id = c->local.conn_id;
    int rc = seal_dir(cr, a->mode, a->secret, remote_id, local_id, a->tx_ds);
    if (!rc)
        rc = seal_key_make(c->ctx, a->tx_ds, &a->tx);
    if (!rc)
        rc = seal_dir(cr, a->mode, a->secret, local_id, remote_id, a->rx_ds);
    if (!rc)
        rc = seal_key_make(c->ctx, a->rx_ds, &a->rx_cur);
    if (!rc)
        rc = seal_ku(cr, a->rx_ds);
    if (!rc)
        rc = seal_key_make(c->ctx, a->rx_ds, &a->rx_next);
    return rc;
}

/* R-AEAD-9: a window whose next new number is first. */
static struct aead_win seal_win_at(uint32_t first)
{
    struct aead_win w = {.high = first - 1};
    memset(w.bits, 0xFF, sizeof(w.bits));
    return w;
}

int eng_seal_connect(struct mroce_conn *c, const struct mroce_conn_params *r,
                     uint32_t n_paths)
{
    struct eng_aead *a = c->aead;
    uint32_t remote_id = r->conn_id;
    if (!a)
        return 0;
    /* R-AEAD-6: equal ids would give both directions one key */
    if (remote_id == c->local.conn_id)
        return MROCE_EINVAL;
    seal_keys_drop(c); /* an earlier connect that failed */
    a->psn_win = eng_alloc(c->ctx, n_paths * sizeof(*a->psn_win));
    if (!a->psn_win)
        return MROCE_ENOMEM;
    a->n_win = n_paths;
    for (uint32_t p = 0; p < n_paths; p++)
        a->psn_win[p] = seal_win_at(r->init_psn); /* R-CONN-5 */
    a->tx_epoch = a->rx_epoch = a->csn = 0;
    a->tx_used = 0;
    a->has_prev = false;
    a->csn_win = seal_win_at(0);
    int rc = seal_keys_make(c, remote_id);
    if (rc)
        seal_keys_drop(c);
    return rc;
}

void eng_seal_connected(struct mroce_conn *c)
{
    if (c->aead)
        seal_wipe(c->aead->secret, sizeof(c->aead->secret));
}

void eng_seal_free(struct mroce_conn *c)
{
    if (!c->aead)
        return;
    seal_keys_drop(c);
    seal_wipe(c->aead, sizeof(*c->aead));
    eng_free(c->ctx, c->aead);
    c->aead = NULL;
}

size_t eng_seal_bytes(const struct mroce_conn *c)
{
    const struct eng_aead *a = c->aead;
    if (!a)
        return 0;
    size_t keys = (a->tx.k != NULL) + (a->rx_prev.k != NULL) +
                  (a->rx_cur.k != NULL) + (a->rx_next.k != NULL);
    size_t wins = a->psn_win ? a->n_win : 0;
    return sizeof(*a) + wins * sizeof(*a->psn_win) +
           keys * c->ctx->crypto.key_bytes;
}

int eng_conn_set_secret(struct mroce_conn *c, int mode, const uint8_t *secret,
                        size_t len)
{
    if (mode != MROCE_SEC_NONE && mode != MROCE_SEC_AUTH &&
        mode != MROCE_SEC_ENCRYPT)
        return MROCE_EINVAL;
    if (c->state != MROCE_CONN_INIT)
        return MROCE_ESTATE;
    if (mode == MROCE_SEC_NONE) {
        eng_seal_free(c);
        return 0;
    }
    if (!secret || len != MROCE_SECRET_LEN)
        return MROCE_EINVAL;
    if (!c->ctx->has_crypto)
        return MROCE_ENOTSUP;
    if (!c->aead && !(c->aead = eng_alloc(c->ctx, sizeof(*c->aead))))
        return MROCE_ENOMEM;
    c->aead->mode = (uint8_t)mode;
    c->aead->key_pkts = ENG_AEAD_KEY_PKTS;
    memcpy(c->aead->secret, secret, MROCE_SECRET_LEN);
    return 0;
}

int eng_conn_sec_mode(const struct mroce_conn *c)
{
    return c->aead ? c->aead->mode : MROCE_SEC_NONE;
}

void mroce_conn_aead_limit(struct mroce_conn *c, uint64_t key_pkts,
                           uint64_t used)
{
    if (!c->aead)
        return;
    c->aead->key_pkts = key_pkts;
    c->aead->tx_used = used;
}

/* ---- transmit (R-AEAD-2..R-AEAD-5, R-AEAD-7, R-AEAD-10) ---- */

/* R-AEAD-7: the next key, once the current one has sealed key_pkts
 * packets. If the provider fails, the current key stays until it works:
 * nonces stay unique either way (R-AEAD-4). */
static void seal_tx_update(struct mroce_conn *c)
{
    struct eng_aead *a = c->aead;
    struct aead_key k = {0};
    uint8_t ds[MROCE_SECRET_LEN];
    memcpy(ds, a->tx_ds, sizeof(ds));
    if (!seal_ku(&c->ctx->crypto, ds) && !seal_key_make(c->ctx, ds, &k)) {
        seal_key_drop(c->ctx, &a->tx);
        a->tx = k;
        memcpy(a->tx_ds, ds, sizeof(ds));
        a->tx_epoch++;
        a->tx_used = 0;
        c->cnt.key_updates_tx++;
    }
    seal_wipe(ds, sizeof(ds));
}

static size_t seal_done(int rc, uint8_t *tag, size_t n)
{
    if (rc) /* the peer drops it (bad_tag) and loss recovery resends */
        memset(tag, 0, MROCE_TAG_LEN);
    return n + MROCE_TAG_LEN;
}

size_t eng_seal(struct mroce_conn *c, uint8_t *buf, size_t hl,
                const uint8_t *payload, uint32_t len, struct mroce_tx_ref *ref)
{
    struct eng_aead *a = c->aead;
    const struct mroce_crypto *cr = &c->ctx->crypto;
    if (a->tx_used >= a->key_pkts)
        seal_tx_update(c);
    bool enc = a->mode == MROCE_SEC_ENCRYPT;
    bool ctl = mroce_aead_is_ctl(buf[1]);
    mroce_aead_frame(buf, a->tx_epoch & 1,
                     !ctl                              ? 0
                     : MROCE_FAULT(c->ctx, CSN_REUSED) ? a->csn
                                                       : a->csn++,
                     enc);
    uint8_t iv[MROCE_AEAD_IV_LEN];
    mroce_aead_nonce(a->tx.iv, buf, iv);
    a->tx_used++;
    if (enc) { /* R-AEAD-3: AAD the headers, the payload encrypted */
        uint8_t *tag = buf + hl + len;
        int rc = cr->seal(cr->ud, a->tx.k, iv, buf, hl, NULL, 0, payload,
                          buf + hl, len, tag);
        return seal_done(rc, tag, hl + len);
    }
    if (ref && len) { /* R-AEAD-10: the payload stays where it lies */
        int rc = cr->seal(cr->ud, a->tx.k, iv, buf, hl, payload, len, NULL,
                          NULL, 0, ref->trailer);
        ref->payload = payload;
        ref->payload_len = len;
        ref->hdr_len = (uint32_t)hl;
        ref->trailer_len = MROCE_TAG_LEN;
        return seal_done(rc, ref->trailer, hl + len);
    }
    if (len && payload != buf + hl)
        memcpy(buf + hl, payload, len);
    uint8_t *tag = buf + hl + len; /* R-AEAD-3: AAD all of it */
    int rc = cr->seal(cr->ud, a->tx.k, iv, buf, hl + len, NULL, 0, NULL, NULL,
                      0, tag);
    return seal_done(rc, tag, hl + len);
}

/* ---- receive (R-AEAD-8, R-AEAD-9) ---- */

/* Moves the window's bits d sequence numbers older. */
static void win_shift(uint64_t b[4], uint32_t d)
{
    if (d >= ENG_AEAD_WIN) {
        memset(b, 0, 4 * sizeof(*b));
        return;
    }
    uint32_t w = d / 64, s = d % 64;
    for (int i = 3; i >= 0; i--) {
        int j = i - (int)w;
        uint64_t v = j >= 0 ? b[j] >> s : 0;
        if (s && j >= 1)
            v |= b[j - 1] << (64 - s);
        b[i] = v;
    }
}

/* R-AEAD-9: true if seq is new (and now seen), false for a replay. */
static bool win_take(struct aead_win *w, uint32_t seq)
{
    uint32_t ahead = seq - w->high;
    if (ahead && ahead < 0x80000000u) {
        win_shift(w->bits, ahead);
        w->high = seq;
        mroce_sack_set(w->bits, 0);
        return true;
    }
    uint32_t back = w->high - seq;
    if (back >= ENG_AEAD_WIN || mroce_sack_test(w->bits, back))
        return false;
    mroce_sack_set(w->bits, back);
    return true;
}

/* R-AEAD-7: a packet opened with the next key moves the receiver on. */
static void seal_rx_advance(struct mroce_conn *c)
{
    struct eng_aead *a = c->aead;
    struct aead_key k = {0};
    uint8_t ds[MROCE_SECRET_LEN];
    memcpy(ds, a->rx_ds, sizeof(ds));
    if (!seal_ku(&c->ctx->crypto, ds) && !seal_key_make(c->ctx, ds, &k)) {
        seal_key_drop(c->ctx, &a->rx_prev);
        a->rx_prev = a->rx_cur;
        a->has_prev = true;
        a->rx_cur = a->rx_next;
        a->rx_next = k;
        memcpy(a->rx_ds, ds, sizeof(ds));
        a->rx_epoch++;
        c->cnt.key_updates_rx++;
    }
    seal_wipe(ds, sizeof(ds));
}

/* Opens with key k: the whole packet but the tag is AAD (authenticated
 * mode), or the headers are and the payload is decrypted into the
 * context's scratch buffer (encrypted mode). */
static bool seal_try(struct mroce_conn *c, const struct aead_key *k,
                     const uint8_t *buf, size_t hl, const struct mroce_hdr *h,
                     const uint8_t *tag)
{
    const struct mroce_crypto *cr = &c->ctx->crypto;
    uint8_t iv[MROCE_AEAD_IV_LEN];
    if (!k->k)
        return false;
    mroce_aead_nonce(k->iv, buf, iv);
    if (c->aead->mode == MROCE_SEC_ENCRYPT)
        return cr->open(cr->ud, k->k, iv, buf, hl, NULL, 0, h->payload,
                        c->ctx->aead_buf, h->payload_len, tag) == 0;
    return cr->open(cr->ud, k->k, iv, buf, hl, h->payload, h->payload_len, NULL,
                    NULL, 0, tag) == 0;
}

/* R-AEAD-7: the key the packet's phase names; the other phase is the
 * next epoch's or, for a late packet, the previous one's. NULL: none. */
static const struct aead_key *seal_open_any(struct mroce_conn *c,
                                            const uint8_t *buf, size_t hl,
                                            const struct mroce_hdr *h,
                                            const uint8_t *tag)
{
    struct eng_aead *a = c->aead;
    bool phase = h->flags & MROCE_HF_KPHASE;
    if (phase == (a->rx_epoch & 1))
        return seal_try(c, &a->rx_cur, buf, hl, h, tag) ? &a->rx_cur : NULL;
    if (seal_try(c, &a->rx_next, buf, hl, h, tag))
        return &a->rx_next;
    if (a->has_prev && seal_try(c, &a->rx_prev, buf, hl, h, tag))
        return &a->rx_prev;
    return NULL;
}

static int seal_drop(uint64_t *counter)
{
    (*counter)++;
    return MROCE_EPROTO;
}

/* R-AEAD-2: a data packet says whether its payload is encrypted, and
 * that must be the connection's mode. */
static bool seal_prot_ok(const struct eng_aead *a, const struct mroce_hdr *h)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(h->opcode);
    if (!(oi->headers & MROCE_H_DXH))
        return true;
    bool enc = h->prot & MROCE_PROT_ENC;
    return enc == (a->mode == MROCE_SEC_ENCRYPT);
}

int eng_open(struct mroce_conn *c, const uint8_t *buf, size_t len,
             struct mroce_hdr *h)
{
    struct eng_aead *a = c->aead;
    bool sealed = h->flags & MROCE_HF_SEAL;
    if (!a || !sealed) /* R-AEAD-8 step 9a */
        return (a && !MROCE_FAULT(c->ctx, PLAIN_ACCEPTED)) || sealed
                   ? seal_drop(&c->cnt.drop_sec_mode)
                   : 0;
    bool enc = a->mode == MROCE_SEC_ENCRYPT;
    if (enc && h->payload_len > c->ctx->mtu) /* not a packet of the peer */
        return seal_drop(&c->cnt.drop_bad_tag);
    size_t hl = (size_t)(h->payload - buf);
    const struct aead_key *k =
        seal_open_any(c, buf, hl, h, buf + len - MROCE_TAG_LEN);
    if (!k && !MROCE_FAULT(c->ctx, TAG_UNCHECKED)) /* step 9b */
        return seal_drop(&c->cnt.drop_bad_tag);
    if (!seal_prot_ok(a, h) && !MROCE_FAULT(c->ctx, PROT_UNCHECKED)) /* 9c */
        return seal_drop(&c->cnt.drop_sec_mode);
    bool ctl = mroce_aead_is_ctl(h->opcode);
    struct aead_win *w = ctl ? &a->csn_win : &a->psn_win[h->path];
    if (!win_take(w, ctl ? h->ts : h->psn) && /* step 9d */
        !MROCE_FAULT(c->ctx, REPLAY_ACCEPTED))
        return seal_drop(&c->cnt.drop_replay);
    if (k == &a->rx_next)
        seal_rx_advance(c);
    if (enc && h->payload_len)
        h->payload = c->ctx->aead_buf;
    return 0;
}
