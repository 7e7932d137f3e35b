/* AEAD framing of sealed packets (docs/spec.md section 3.14). */
#include "wire/aead.h"

#include "wire/be.h"

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
