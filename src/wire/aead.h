/* AEAD framing of the secure modes (docs/spec.md section 3.14, R-AEAD-*):
 * which header bits and fields a sealed packet uses, its nonce, and where
 * its tag lies. Pure functions over packet bytes; the cipher itself is
 * the caller's (the engine's crypto provider). */
#ifndef MROCE_WIRE_AEAD_H
#define MROCE_WIRE_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/wire.h"

/* MTH byte 0 flag bits of a sealed packet (R-AEAD-1). */
#define MROCE_HF_SEAL 0x2   /* the trailer is a 16-byte AES-GCM tag */
#define MROCE_HF_KPHASE 0x1 /* key phase: the sender's key epoch mod 2 */
/* DXH byte 6 of a sealed data packet: the payload is ciphertext. */
#define MROCE_PROT_ENC 0x01
#define MROCE_TAG_LEN 16 /* R-AEAD-3 */
#define MROCE_NONCE_LEN 12
#define MROCE_DXH_PROT_OFF (MROCE_MTH_LEN + 6) /* byte 6 of the DXH */

/* Trailer length of a packet whose first byte is b0: tag or ICRC. */
static inline size_t mroce_aead_trailer_len(uint8_t b0)
{
    return (b0 & MROCE_HF_SEAL) ? MROCE_TAG_LEN : MROCE_ICRC_LEN;
}

/* R-AEAD-4: ACK, NACK, CLOSE and CLOSE_ACK take their nonce from the
 * connection's control sequence (CSN, carried in MTH ts); data packets
 * and PROBEs from their path and PSN. */
static inline bool mroce_aead_is_ctl(uint8_t opcode)
{
    return opcode == MROCE_OP_ACK || opcode == MROCE_OP_ACKM ||
           opcode == MROCE_OP_NACK || opcode == MROCE_OP_CLOSE ||
           opcode == MROCE_OP_CLOSE_ACK;
}

/* R-AEAD-2: turns the encoded headers buf[0, hdr_len) of an opcode into
 * a sealed packet's: byte 0 gets SEAL and the key phase, a control
 * packet's MTH ts becomes its CSN, a data packet's DXH byte 6 its
 * protection (MROCE_PROT_ENC when the payload is encrypted). */
void mroce_aead_frame(uint8_t *buf, bool kphase, uint32_t csn, bool enc);

/* Offset in the MTH of a sealed packet's nonce sequence: PSN or CSN. */
static inline size_t mroce_aead_seq_off(const uint8_t *buf)
{
    return mroce_aead_is_ctl(buf[1]) ? 12 : 8;
}

/* The sequence number of a sealed packet's nonce: PSN or CSN. */
static inline uint32_t mroce_aead_seq(const uint8_t *buf)
{
    const uint8_t *p = buf + mroce_aead_seq_off(buf);
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* R-AEAD-4: nonce = iv XOR (domain u16 || path u16 || 0 u32 || seq u32),
 * domain 0 for data packets and PROBEs (path, PSN), 1 for control
 * packets (path 0, CSN). Every packet (both ends) computes one, so it is
 * inline and works on the wire's big-endian bytes as they are: the path
 * is MTH bytes 2-3, the sequence MTH bytes 8-11 or 12-15. */
static inline void mroce_aead_nonce(const uint8_t *iv, const uint8_t *buf,
                                    uint8_t out[MROCE_NONCE_LEN])
{
    bool ctl = mroce_aead_is_ctl(buf[1]);
    const uint8_t *seq = buf + (ctl ? 12 : 8);
    out[0] = iv[0];
    out[1] = (uint8_t)(iv[1] ^ (ctl ? 1 : 0));
    out[2] = (uint8_t)(iv[2] ^ (ctl ? 0 : buf[2]));
    out[3] = (uint8_t)(iv[3] ^ (ctl ? 0 : buf[3]));
    memcpy(out + 4, iv + 4, 4);
    for (int i = 0; i < 4; i++)
        out[8 + i] = (uint8_t)(iv[8 + i] ^ seq[i]);
}

#endif
