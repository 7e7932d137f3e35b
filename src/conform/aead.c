/* The secure modes from the suite's side (spec 3.14, R-AEAD-*), written
 * from the spec alone with OpenSSL: the key schedule of R-AEAD-6, the
 * nonce of R-AEAD-4, sealing and opening of R-AEAD-3. The suite seals
 * what it sends and opens what the IUT sends with keys it derived itself,
 * so a key, nonce or AAD of the IUT's that differs from the spec shows as
 * a tag that does not verify. */
#include <openssl/evp.h>
#include <string.h>

#include "conform/cf.h"
#include "conform/cm.h"
#include "wire/be.h"
#include "wire/crc32c.h"

/* R-AEAD-6: key(0) and iv(0) of the direction toward `dst` from `src`. */
static bool aead_dir(int mode, const uint8_t secret[32], uint32_t dst,
                     uint32_t src, uint8_t key[16], uint8_t iv[12])
{
    uint8_t info[32], d0[32];
    memcpy(info, "mroce dir", 9);
    info[9] = (uint8_t)mode;
    mroce_be32_put(info + 10, dst);
    mroce_be32_put(info + 14, src);
    return cf_hkdf_expand(secret, 32, info, 18, d0, 32) &&
           cf_hkdf_expand(d0, 32, (const uint8_t *)"mroce key", 9, key, 16) &&
           cf_hkdf_expand(d0, 32, (const uint8_t *)"mroce iv", 8, iv, 12);
}

bool cf_aead_init(struct cf_aead *a, int mode, const uint8_t secret[32],
                  uint32_t my_id, uint32_t iut_id)
{
    memset(a, 0, sizeof(*a));
    a->mode = mode;
    return aead_dir(mode, secret, iut_id, my_id, a->key_tx, a->iv_tx) &&
           aead_dir(mode, secret, my_id, iut_id, a->key_rx, a->iv_rx);
}

static bool aead_is_data(uint8_t op)
{
    return (op >= MROCE_OP_WRITE && op <= MROCE_OP_READ_RESP) ||
           op == MROCE_OP_PROBE;
}

/* R-AEAD-4: domain 0 (path, PSN) for data and PROBEs, domain 1 (CSN in
 * MTH ts) for control packets; XOR the epoch's IV. */
static void aead_nonce(const uint8_t *pkt, const uint8_t iv[12],
                       uint8_t nonce[12])
{
    uint8_t in[12] = {0};
    if (aead_is_data(pkt[1])) {
        memcpy(in + 2, pkt + 2, 2); /* path */
        memcpy(in + 8, pkt + 8, 4); /* psn */
    } else {
        in[1] = 1;
        memcpy(in + 8, pkt + 12, 4); /* CSN */
    }
    for (int i = 0; i < 12; i++)
        nonce[i] = in[i] ^ iv[i];
}

/* AES-128-GCM over pkt: AAD [0, aad_len), text [aad_len, end). */
static bool aead_gcm(bool enc, const uint8_t key[16], const uint8_t n[12],
                     uint8_t *pkt, size_t aad_len, size_t text_len,
                     uint8_t tag[16])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l;
    bool ok = c &&
              (enc ? EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, key, n)
                   : EVP_DecryptInit_ex(c, EVP_aes_128_gcm(), NULL, key, n)) &&
              (enc ? EVP_EncryptUpdate(c, NULL, &l, pkt, (int)aad_len)
                   : EVP_DecryptUpdate(c, NULL, &l, pkt, (int)aad_len));
    if (ok && text_len)
        ok = enc ? EVP_EncryptUpdate(c, pkt + aad_len, &l, pkt + aad_len,
                                     (int)text_len)
                 : EVP_DecryptUpdate(c, pkt + aad_len, &l, pkt + aad_len,
                                     (int)text_len);
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, tag);
    if (ok)
        ok = enc ? EVP_EncryptFinal_ex(c, pkt + aad_len + text_len, &l)
                 : EVP_DecryptFinal_ex(c, pkt + aad_len + text_len, &l) > 0;
    if (ok && enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

size_t cf_aead_seal(struct cf_aead *a, uint8_t *pkt, size_t body, int prot)
{
    size_t hl = mroce_wire_hdr_len(pkt[1]);
    pkt[0] = (uint8_t)(0x10 | (pkt[0] & 0xC) | 0x2); /* SEAL, phase 0 */
    if (!aead_is_data(pkt[1]))
        mroce_be32_put(pkt + 12, a->csn_tx++); /* R-AEAD-2 (b) */
    bool enc = a->mode == 2;
    if (pkt[1] >= MROCE_OP_WRITE && pkt[1] <= MROCE_OP_READ_RESP)
        pkt[22] = prot >= 0 ? (uint8_t)prot : enc ? 0x01 : 0x00; /* R-AEAD-2 */
    uint8_t n[12];
    aead_nonce(pkt, a->iv_tx, n);
    if (!hl || body < hl ||
        !aead_gcm(true, a->key_tx, n, pkt, enc ? hl : body, enc ? body - hl : 0,
                  pkt + body))
        return 0;
    return body + 16;
}

int cf_aead_open(const struct cf_aead *a, const uint8_t *in, size_t len,
                 uint8_t *out)
{
    size_t hl = len >= 2 ? mroce_wire_hdr_len(in[1]) : 0;
    if (!hl || len < hl + 16 || !(in[0] & 0x2))
        return -1;
    size_t body = len - 16;
    memcpy(out, in, body);
    bool enc = a->mode == 2;
    uint8_t n[12], tag[16];
    memcpy(tag, in + body, 16);
    aead_nonce(out, a->iv_rx, n);
    if (!aead_gcm(false, a->key_rx, n, out, enc ? hl : body,
                  enc ? body - hl : 0, tag))
        return -2;
    /* the plaintext as a packet of mode none, for the usual decoder */
    out[0] &= (uint8_t)~0x3;
    mroce_wire_seal(out, body);
    return (int)(body + 4);
}
