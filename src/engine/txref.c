/* Zero-copy transmit (mroce_ctx_tx_ref): a data packet's payload stays
 * where it lies in registered memory; the engine writes the headers and
 * computes the ICRC over headers and payload in place (R-CRC-1), so the
 * datapath can gather the packet without the engine's copy. The same
 * code path serves mroce_ctx_tx, which copies: both emit the same bytes. */
#include <string.h>

#include "engine/eng.h"
#include "engine/seal.h"
#include "wire/aead.h"
#include "wire/be.h"
#include "wire/crc32c.h"

_Static_assert(MROCE_TX_ICRC_LEN == MROCE_ICRC_LEN, "one ICRC size");

/* R-CRC-1: the ICRC covers every byte from the MTH to the last payload
 * byte, here chained over the two places they lie. The payload has not
 * been read since the application wrote it: likely in no cache. */
static void txref_set(struct mroce_tx_ref *ref, const uint8_t *hdr, size_t hl,
                      const uint8_t *payload, uint32_t len)
{
    uint32_t crc = mroce_crc32c_cold(mroce_crc32c(0, hdr, hl), payload, len);
    ref->payload = payload;
    ref->payload_len = len;
    ref->hdr_len = (uint32_t)hl;
    ref->trailer_len = MROCE_ICRC_LEN;
    mroce_be32_put(ref->trailer, crc);
}

/* mroce_ctx_attr.no_icrc: the packet as usual but with a zero ICRC, for
 * a receiver that checks none (mroce_wire_decode_nocrc). */
static size_t txref_unsealed(struct mroce_ctx *ctx, uint8_t *buf, size_t hl,
                             const uint8_t *payload, uint32_t len,
                             struct mroce_tx_ref *ref)
{
    if (ref && len && !dev_mem_is_virt(&ctx->dev, payload, len)) {
        ref->payload = payload;
        ref->payload_len = len;
        ref->hdr_len = (uint32_t)hl;
        ref->trailer_len = MROCE_ICRC_LEN;
        memset(ref->trailer, 0, MROCE_ICRC_LEN);
        return hl + len + MROCE_ICRC_LEN;
    }
    if (len)
        dev_mem_get(&ctx->dev, buf + hl, payload, len);
    memset(buf + hl + len, 0, MROCE_ICRC_LEN);
    return hl + len + MROCE_ICRC_LEN;
}

size_t eng_tx_payload(struct mroce_conn *c, uint8_t *buf, size_t hl,
                      const uint8_t *payload, uint32_t len)
{
    struct mroce_ctx *ctx = c->ctx;
    struct mroce_tx_ref *ref = ctx->tx_ref;
    if (c->aead && len && dev_mem_is_virt(&ctx->dev, payload, len)) {
        /* a payload-free region: its bytes exist only through its hook */
        dev_mem_get(&ctx->dev, buf + hl, payload, len);
        return eng_seal(c, buf, hl, buf + hl, len, NULL);
    }
    if (c->aead) /* R-AEAD-3 */
        return eng_seal(c, buf, hl, payload, len, ref);
    if (ctx->no_icrc)
        return txref_unsealed(ctx, buf, hl, payload, len, ref);
    if (ref && len && !dev_mem_is_virt(&ctx->dev, payload, len)) {
        txref_set(ref, buf, hl, payload, len);
        return hl + len + MROCE_ICRC_LEN;
    }
    if (len)
        dev_mem_get(&ctx->dev, buf + hl, payload, len);
    return mroce_wire_seal(buf, hl + len);
}

/* Control packets (ACK, ACKM, NACK, PROBE, CLOSE): sealed in secure
 * modes (an ACKM's records are its payload, R-AEAD-3), else with an ICRC,
 * zero under no_icrc like data (its receivers check none: computing it
 * cost a CRC32C per ACK). The payload may lie in place already, after
 * the headers in buf (resp_ackm writes it there). */
int eng_tx_ctl_pl(struct mroce_conn *c, const struct mroce_hdr *h,
                  const uint8_t *pl, uint32_t len, uint8_t *buf, size_t cap)
{
    if (!c->aead && !c->ctx->no_icrc)
        return mroce_wire_encode(h, pl, len, buf, cap);
    int hl = mroce_wire_write_hdr(h, buf, cap);
    size_t tl = c->aead ? MROCE_TAG_LEN : MROCE_ICRC_LEN;
    if (hl < 0 || (size_t)hl + len + tl > cap)
        return hl < 0 ? hl : MROCE_WIRE_ENOSPC;
    if (c->aead)
        return (int)eng_seal(c, buf, (size_t)hl, pl, len, NULL);
    if (len && pl != buf + hl)
        memcpy(buf + hl, pl, len);
    memset(buf + hl + len, 0, MROCE_ICRC_LEN);
    return hl + (int)len + MROCE_ICRC_LEN;
}

int eng_ctx_tx_ref(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf,
                   size_t cap, struct mroce_pkt_meta *meta,
                   struct mroce_tx_ref *ref)
{
    *ref = (struct mroce_tx_ref){0};
    ctx->tx_ref = ref;
    int n = eng_ctx_tx(ctx, now, buf, cap, meta);
    ctx->tx_ref = NULL;
    return eng_txref_done(n, ref);
}

int eng_txref_done(int n, struct mroce_tx_ref *ref)
{
    if (n > 0 && !ref->payload_len)
        ref->hdr_len = (uint32_t)n; /* whole in buf */
    return n;
}
