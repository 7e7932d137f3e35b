/* AEAD framing of sealed packets (docs/spec.md section 3.14). */
#include "wire/aead.h"

#include "wire/be.h"

bool mroce_aead_is_ctl(uint8_t opcode)
{
    return opcode == MROCE_OP_ACK || opcode == MROCE_OP_NACK ||
           opcode == MROCE_OP_CLOSE || opcode == MROCE_OP_CLOSE_ACK;
}

void mroce_aead_frame(uint8_t *buf, bool kphase, uint32_t csn, bool enc)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(buf[1]);
    buf[0] = (uint8_t)((buf[0] & ~MROCE_HF_KPHASE) | MROCE_HF_SEAL |
                       (kphase ? MROCE_HF_KPHASE : 0));
    if (mroce_aead_is_ctl(buf[1]))
        mroce_be32_put(buf + 12, csn); /* R-AEAD-4: MTH ts */
    if (oi && (oi->headers & MROCE_H_DXH))
        buf[MROCE_DXH_PROT_OFF] = enc ? MROCE_PROT_ENC : 0;
}

uint32_t mroce_aead_seq(const uint8_t *buf)
{
    return mroce_be32_get(buf + (mroce_aead_is_ctl(buf[1]) ? 12 : 8));
}

void mroce_aead_nonce(const uint8_t *iv, const uint8_t *buf,
                      uint8_t out[MROCE_NONCE_LEN])
{
    bool ctl = mroce_aead_is_ctl(buf[1]);
    uint8_t n[MROCE_NONCE_LEN] = {0};
    n[1] = ctl ? 1 : 0;
    if (!ctl)
        mroce_be16_put(n + 2, mroce_be16_get(buf + 2)); /* MTH path */
    mroce_be32_put(n + 8, mroce_aead_seq(buf));
    for (int i = 0; i < MROCE_NONCE_LEN; i++)
        out[i] = iv[i] ^ n[i];
}
